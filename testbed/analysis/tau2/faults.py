"""Simulated-user faults over a stored τ² run: one row per episode with a column per fault kind, and the faults turn by
turn, so a failed episode can be put down to the simulator or the agent (testbed.scenarios.tau2.user_faults).

The faults are those stored when the run finished (testbed.analysis.tau2.stored_faults), so reading them needs no τ²;
an episode without stored faults is detected now when τ² is installed (its task found by the episode's item id in
the domain its dataset names, `testbed.specs.tau2.domain_of`), else it is not `checked` and shows no fault, as is an
episode whose task the installed τ² lacks or that has no stored messages. A judge, when given, supplies role drift
(the drift faults stored when it judged, else its latest scored label per user turn).
"""

from __future__ import annotations

import pandas as pd

from testbed.analysis.frames import run_frames
from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.metrics import is_success
from testbed.analysis.tau2.stored_faults import FAULT_MEANINGS, run_faults
from testbed.judges.fault_review import FlaggedFault
from testbed.scenarios.tau2.user_faults import FAULT_KINDS, UserFault
from testbed.store import Store
from testbed.store.frames import run_id_of
from testbed.store.labels import JudgeIdentity
from testbed.store.run_frames import RunFrames

EPISODE_COLUMNS = ["episode_id", "user_model", "user_temperature", "framework", "task_id", "reward", "termination", "failed",
                   "checked", *FAULT_KINDS, "any_fault"]
"""The columns of `fault_frame`, in order (the condition columns reports group by follow them)."""
TURN_COLUMNS = ["episode_id", "turn_index", "kind", "evidence"]
"""The columns of `turn_faults`."""


def fault_frame(source: Store | RunFrames, run_id: str | None = None, judge: JudgeIdentity | None = None) -> pd.DataFrame:
    """One row per episode of the run (errored ones too): who simulated the user and how, the task, its reward and
    termination, `failed` (an error, or a reward short of 1 by τ²'s tolerance; an unscored episode has not failed),
    `checked` (its task and messages were found), one bool per fault kind and `any_fault`. The assistant model,
    dataset, user mode and perturbation follow, so the frame groups like a report. `source` is the run's frames, or a
    store with the run's id (a unique prefix is enough) and judge."""
    run = _frames(source, run_id, judge)
    episodes, faults = _detected(run)
    framework = run.store.framework_of(run.run_id) if len(episodes) else None
    rows = []
    for e in episodes.itertuples(index=False):
        found = faults.get(e.episode_id)
        kinds = {f.kind for f in found or ()}
        reward = None if pd.isna(e.task_score) else float(e.task_score)
        rows.append({"episode_id": e.episode_id, "user_model": e.user_model, "user_temperature": float(e.temperature),
                     "framework": framework, "task_id": e.item_id, "reward": reward, "termination": e.termination,
                     "failed": e.status == "error" or (reward is not None and not is_success(reward)),
                     "checked": found is not None,
                     **{k: k in kinds for k in FAULT_KINDS}, "any_fault": bool(kinds),
                     "assistant_model": e.assistant_model, "dataset": e.dataset, "user_mode": e.user_mode,
                     "perturbation": e.perturbation, "status": e.status})
    columns = [*EPISODE_COLUMNS, "assistant_model", "dataset", "user_mode", "perturbation", "status"]
    frame = pd.DataFrame(rows, columns=columns)
    bools = ["failed", "checked", *FAULT_KINDS, "any_fault"]
    return frame.astype({c: bool for c in bools}).astype({"reward": "float64", "user_temperature": "float64"})


def turn_faults(source: Store | RunFrames, run_id: str | None = None, judge: JudgeIdentity | None = None) -> pd.DataFrame:
    """Every fault of every checked episode: episode_id, turn_index (the user turn), kind, evidence; in episode and turn order.
    `source` as `fault_frame` takes it."""
    _, faults = _detected(_frames(source, run_id, judge))
    rows = [(eid, f.turn_index, f.kind, f.evidence) for eid in sorted(faults) for f in faults[eid]]
    return pd.DataFrame(rows, columns=TURN_COLUMNS).astype({"turn_index": "int64"})


def _frames(source: Store | RunFrames, run_id: str | None, judge: JudgeIdentity | None) -> RunFrames:
    """`source` itself when it is a run's frames, else the run (a unique prefix of its id is enough) under `judge`, as
    the command's shared frames of it (`testbed.analysis.frames.run_frames`)."""
    if isinstance(source, RunFrames):
        return source
    full = run_id if source.find_run(run_id) is not None else run_id_of(source, run_id)
    return run_frames(source, full, judge)


def _detected(run: RunFrames) -> tuple[pd.DataFrame, dict[str, list[UserFault]]]:
    """The run's episodes, and the faults of each checked episode by id (testbed.analysis.tau2.stored_faults), read once
    per run and judge (`RunFrames.derived`: the fault rates, the reviewed faults and the comparison's cells share them)."""
    checked, found = run.derived(("tau2 user faults", run.judge), lambda: run_faults(run.store, run.run_id, run.judge))
    faults: dict[str, list[UserFault]] = {eid: [] for eid in checked}
    for eid, fault in found:
        faults.setdefault(eid, []).append(fault)
    return run.episodes, faults


FAULT_RATE_COLUMNS = [*(f"fault_{k}{s}" for k in (*FAULT_KINDS, "any") for s in ("", "_lo", "_hi")),
                      "failed_with_fault", "failed_with_fault_lo", "failed_with_fault_hi", "fault_episodes", "failed_episodes"]
"""What `fault_rates` gives a report row, in order."""


def fault_rates(faults: pd.DataFrame, judged: bool) -> dict[str, float | int]:
    """A condition group's fault rates from its `fault_frame` rows: each kind's share of finished, checked episodes
    (`fault_episodes`) with a Wilson 95 % interval, the share with any fault, and the share of the failed ones among
    them (`failed_episodes`, reward short of 1) with any fault. Errored episodes are left out, as every rate of a
    report leaves them out. Without a judge there are no drift labels: `fault_role_drift` is NaN and `any` counts
    the other kinds."""
    rows = faults[(faults.status == "done") & faults.checked]
    failed = rows[rows.failed]
    n, out = len(rows), {}

    def rate(name: str, hits: int, total: int) -> None:
        lo, hi = wilson_interval(hits, total)
        out.update({name: hits / total if total else float("nan"), f"{name}_lo": lo, f"{name}_hi": hi})

    for kind in FAULT_KINDS:
        if kind == "role_drift" and not judged:
            out.update({f"fault_{kind}": float("nan"), f"fault_{kind}_lo": float("nan"), f"fault_{kind}_hi": float("nan")})
        else:
            rate(f"fault_{kind}", int(rows[kind].sum()), n)
    rate("fault_any", int(rows.any_fault.sum()), n)
    rate("failed_with_fault", int(failed.any_fault.sum()), len(failed))
    out.update({"fault_episodes": n, "failed_episodes": len(failed)})
    return out


def flagged_faults(store: Store, run_id: str, judge: JudgeIdentity | None = None) -> list[FlaggedFault]:
    """The faults of the run's finished, checked episodes, as a reviewer is asked about them (errored episodes are left
    out, as every rate of a report leaves them out: reviewing them would be paid for and never shown)."""
    episodes, faults = _detected(_frames(store, run_id, judge))
    finished = set(episodes.episode_id[episodes.status == "done"])
    return [FlaggedFault(eid, f.turn_index, f.kind, f.evidence, FAULT_MEANINGS[f.kind])
            for eid in sorted(faults) if eid in finished for f in faults[eid]]


REVIEW_COLUMNS = [*TURN_COLUMNS, "reviewed", "verdict"]
"""The columns of `reviewed_faults`."""
REVIEW_RATE_COLUMNS = ["fault_hindered", "fault_hindered_lo", "fault_hindered_hi", "fault_reviewed", "fault_review_unscored",
                       "failed_hindered", "failed_hindered_lo", "failed_hindered_hi", "failed_hindered_known", "fault_reviewer"]
"""What `review_rates` gives a report row, in order."""


def reviewed_faults(source: Store | RunFrames, run_id: str | None = None,
                    judge: JudgeIdentity | None = None) -> tuple[JudgeIdentity, pd.DataFrame] | None:
    """The reviewer that wrote last on the run (testbed.judges.fault_review) and every fault of the run's checked
    episodes with its latest review by it: `turn_faults`' columns, `reviewed` (a review exists) and `verdict`
    (`hindered`, `harmless`, None when unreviewed or unscored); None when no reviewer reviewed the run. Reviews of
    faults the rules no longer flag are left out. `source` as `fault_frame` takes it."""
    run = _frames(source, run_id, judge)
    reviewers = run.store.fault_reviewers(run.run_id)
    if not reviewers:
        return None
    latest = {r.key: r for r in run.store.fault_reviews(run.run_id, reviewers[-1])}
    rows = []
    for eid, turn, kind, evidence in turn_faults(run).itertuples(index=False, name=None):
        review = latest.get((eid, turn, kind))
        rows.append((eid, turn, kind, evidence, review is not None, review.verdict if review is not None else None))
    return reviewers[-1], pd.DataFrame(rows, columns=REVIEW_COLUMNS).astype({"turn_index": "int64", "reviewed": bool})


def review_rates(faults: pd.DataFrame, reviewed: pd.DataFrame, reviewer: JudgeIdentity) -> dict[str, float | int | str]:
    """A condition group's fault severity from its `fault_frame` rows (indexed by episode id) and the run's
    `reviewed_faults`: the share of its reviewed faults (finished, checked episodes; a fault is one kind on one turn)
    judged hindering, with a Wilson 95 % interval, over `fault_reviewed` scored reviews, `fault_review_unscored`
    counted apart; and the share of its failed episodes with a fault judged hindering, over `failed_hindered_known`,
    the failed episodes whose answer is known (a hindering fault, or every fault reviewed, or none flagged)."""
    rows = faults[(faults.status == "done") & faults.checked]
    mine = reviewed[reviewed.episode_id.isin(rows.index)]
    scored = mine[mine.verdict.notna()]
    out: dict[str, float | int | str] = {}

    def rate(name: str, hits: int, total: int) -> None:
        lo, hi = wilson_interval(hits, total)
        out.update({name: hits / total if total else float("nan"), f"{name}_lo": lo, f"{name}_hi": hi})

    rate("fault_hindered", int((scored.verdict == "hindered").sum()), len(scored))
    out.update({"fault_reviewed": len(scored), "fault_review_unscored": int((mine.reviewed & mine.verdict.isna()).sum())})
    by_episode = {eid: list(g.verdict) for eid, g in mine.groupby("episode_id")}
    failed = [by_episode.get(eid, []) for eid in rows.index[rows.failed]]
    hindered = sum("hindered" in v for v in failed)
    known = sum("hindered" in v or all(pd.notna(x) for x in v) for v in failed)
    rate("failed_hindered", hindered, known)
    out.update({"failed_hindered_known": known, "fault_reviewer": str(reviewer)})
    return out
