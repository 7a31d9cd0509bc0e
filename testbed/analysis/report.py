"""The run report: per assistant model × dataset × user mode × temperature (× perturbation)."""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.frames import CONDITIONS, episodes_frame, judge_labels
from testbed.analysis.stats import wilson_interval
from testbed.judges.taxonomy import taxonomy
from testbed.specs.registries import KINDS
from testbed.store import Store
from testbed.store.labels import JudgeIdentity

GROUP = CONDITIONS


def _judge_columns(done: pd.DataFrame) -> dict:
    """Follow-up rate with its interval and the label distribution, over scored turns only."""
    scored = done[done.judge_status == "scored"]
    n = len(scored)
    followups = int(scored.judge_followup.fillna(0).astype(bool).sum())
    lo, hi = wilson_interval(followups, n)
    out = {
        "judged": n,
        "unscored": int((done.judge_status == "unscored").sum()),
        "unjudged": int(done.judge_status.isna().sum()),
        "followup_rate": followups / n if n else math.nan,
        "followup_lo": lo,
        "followup_hi": hi,
    }
    labelled = scored.judge_label.dropna()
    for label in taxonomy().labels:
        out[f"share_{label}"] = float((labelled == label).mean()) if len(labelled) else math.nan
    return out


def _group_row(g: pd.DataFrame) -> dict:
    done = g[g.status == "done"]
    scored = g[g.task_score.notna()]
    correct = int(scored.task_score.sum())
    acc_lo, acc_hi = wilson_interval(correct, len(scored))
    same = int(done.identical_to_question.sum())
    same_lo, same_hi = wilson_interval(same, len(done))
    return {
        "episodes": len(g),
        "errors": int((g.status == "error").sum()),
        "scored": len(scored),
        "accuracy": correct / len(scored) if len(scored) else math.nan,
        "accuracy_lo": acc_lo,
        "accuracy_hi": acc_hi,
        "user_turn_words": float(done.user_turn_words.mean()) if len(done) else math.nan,
        "user_turn_tokens": float(done.user_turn_tokens.mean()) if len(done) else math.nan,
        "empty_user_turns": int(done.user_turn.fillna("").str.strip().eq("").sum()),
        "identical_to_question": same / len(done) if len(done) else math.nan,
        "identical_lo": same_lo,
        "identical_hi": same_hi,
        **(_judge_columns(done) if "judge_status" in g else {}),
    }


def report_frame(store: Store, run_id: str, judge: JudgeIdentity | None = None, correction=None) -> pd.DataFrame:
    """The report as a frame; rates exclude errored episodes (and, for judge rates, unscored turns),
    and `errors`, `unscored` and `unjudged` say how many were excluded. The run kind's `report`
    in testbed.specs.registries.KINDS builds it, so each kind has its own columns; a run id not
    in the store gives the probe's empty frame."""
    run = store.find_run(run_id)
    name = run.kind if run is not None else "probe"
    frame = KINDS.get(name).resolve("report")(store, run_id, name, judge)
    return with_corrected_rates(frame, correction) if correction is not None and judge is not None else frame


def with_corrected_rates(frame: pd.DataFrame, rates) -> pd.DataFrame:
    """The report with the follow-up rate corrected for the judge's measured errors beside the raw one.

    `rates` (testbed.analysis.correction.JudgeErrorRates) are the judge's follow-up error counts on
    a labelled set, named in `corrected_with`; the interval carries both this run's sampling error
    and the uncertainty of those rates.
    """
    from testbed.analysis.correction import corrected_rate

    if "followup_rate" not in frame or frame.empty:
        return frame
    rows = []
    for judged, rate in zip(frame.judged, frame.followup_rate):
        n = int(judged) if judged == judged else 0
        out = corrected_rate(round(rate * n) if n else 0, n, rates)
        rows.append((out.corrected, out.lo, out.hi))
    corrected = pd.DataFrame(rows, columns=["followup_corrected", "corrected_lo", "corrected_hi"], index=frame.index)
    at = list(frame.columns).index("followup_rate") + 1
    while at < len(frame.columns) and frame.columns[at] in ("followup_lo", "followup_hi"):
        at += 1
    out = pd.concat([frame.iloc[:, :at], corrected, frame.iloc[:, at:]], axis=1)
    out["corrected_with"] = rates.source
    return out


def probe_report(store: Store, run_id: str, kind: str, judge: JudgeIdentity | None = None) -> pd.DataFrame:
    """The probe's report (its `report` in KINDS): one row per condition group, perturbation included.

    `kind` is part of every kind's report signature, for report functions shared by several kinds.
    """
    frame = episodes_frame(store, run_id)
    if judge is not None:
        labels = judge_labels(store, run_id, judge).rename(columns={
            "turn_index": "user_turn_index", "status": "judge_status", "label": "judge_label", "followup": "judge_followup"})
        frame = frame.merge(labels[["episode_id", "user_turn_index", "judge_status", "judge_label", "judge_followup"]],
                            on=["episode_id", "user_turn_index"], how="left")
    if frame.empty:
        return pd.DataFrame(columns=GROUP + list(_group_row(frame).keys()))
    rows = [{**dict(zip(GROUP, keys)), **_group_row(g)} for keys, g in frame.groupby(GROUP, sort=True, dropna=False)]
    return pd.DataFrame(rows)
