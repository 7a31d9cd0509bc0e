"""Frameworks side by side: the same scenario's runs, one per framework, measured alike and paired with `native`.

Episode ids do not depend on the framework (they hash the scenario's conditions), so the same id
in two runs is the same item, user mode, temperature and sample: the paired difference compares
exactly those episodes, turn by turn (`shared_episodes`). The runs' kind adds its own cells through its views
(testbed.specs.kind_views: `compare_cells`, `compare_paired`, `simulator_gap`), and its renderers their columns.

Each run is one `RunFrames` (testbed.store.run_frames), read once: the baseline's turns, read for its own row,
are the same frames every other row is paired with.
"""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd

from testbed.analysis.drift import drift_summary, frames_drift
from testbed.analysis.frames import normalise
from testbed.analysis.stats import wilson_interval
from testbed.specs.registries import FRAMEWORKS, kind_views
from testbed.store import JudgeIdentity, Store
from testbed.store.run_frames import RunFrames

LABEL_MIX_TOP = 3


def _share(hits: int, n: int) -> tuple[float, float, float]:
    lo, hi = wilson_interval(hits, n)
    return (hits / n if n else math.nan, lo, hi)


def _user_turns(run: RunFrames) -> pd.DataFrame:
    frame = run.judged_turns
    return frame[frame.status == "done"].sort_values(["episode_id", "turn_index"])


def framework_row(run: RunFrames, framework: str) -> dict:
    """One framework's run under its judge, measured: counts, labels with 95 % intervals, drift, stops, tokens and cost."""
    judge, episodes = run.judge, run.episodes
    turns = _user_turns(run)
    scored = turns[turns.judge_status == "scored"] if judge is not None else None
    followups = int((scored.judge_followup == 1).sum()) if scored is not None else 0
    rate, lo, hi = _share(followups, len(scored) if scored is not None else 0)
    labels = Counter(scored.judge_label.dropna()) if scored is not None else Counter()
    scored = scored if scored is not None else turns.iloc[0:0]
    mix = {label: _share(n, len(scored)) for label, n in labels.most_common()}
    drift = drift_summary(frames_drift(run)) if judge is not None and len(scored) else None
    messages = run.messages
    made = messages[messages.sampling_json.notna() & messages.reused_from.isna()]
    cost = run.cost or (math.nan, math.nan)
    terminations = Counter(episodes[episodes.status == "done"].termination.dropna())
    return {
        "framework": framework, "run_id": run.run_id,
        "episodes": len(episodes), "errors": int((episodes.status == "error").sum()),
        "user_turns": len(turns), "scored_turns": len(scored),
        "followup_rate": rate, "followup_lo": lo, "followup_hi": hi,
        "label_mix": {k: {"share": v[0], "lo": v[1], "hi": v[2]} for k, v in mix.items()},
        "drift_share": drift["share_drifted"] if drift else math.nan,
        "drift_lo": drift["share_lo"] if drift else math.nan, "drift_hi": drift["share_hi"] if drift else math.nan,
        "median_onset": drift["median_onset"] if drift else math.nan,
        "terminations": dict(terminations.most_common()),
        "prompt_tokens_per_turn": float(made.prompt_tokens.mean()) if len(made) else math.nan,
        "completion_tokens_per_turn": float(made.completion_tokens.mean()) if len(made) else math.nan,
        "generated_turns": len(made),
        "wall_s": cost[0], "client_cpu_ms_per_turn": 1000 * cost[1] / len(made) if len(made) else math.nan,
    }


def paired_with_native(native: RunFrames, other: RunFrames) -> dict:
    """On the episodes both runs finished: the share of user turns that differ (by position; a turn only one side
    has differs) with a 95 % interval, and the change in follow-up rate over the same episodes (each under its judge)."""
    mine, theirs = _user_turns(other), _user_turns(native)
    shared = shared_episodes(mine.episode_id, theirs.episode_id)
    differ = total = 0
    for eid in shared:
        a = [normalise(t) for t in mine[mine.episode_id == eid].user_turn]
        b = [normalise(t) for t in theirs[theirs.episode_id == eid].user_turn]
        total += max(len(a), len(b))
        differ += sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
    share, lo, hi = _share(differ, total)
    change = math.nan
    if other.judge is not None and native.judge is not None:
        rates = []
        for frame in (mine, theirs):
            kept = frame[frame.episode_id.isin(shared) & (frame.judge_status == "scored")]
            rates.append((kept.judge_followup == 1).mean() if len(kept) else math.nan)
        change = rates[0] - rates[1]
    return {"paired_episodes": len(shared), "paired_turns": total, "turns_differ": share, "turns_differ_lo": lo,
            "turns_differ_hi": hi, "followup_change": change}


def shared_episodes(mine, theirs) -> list[str]:
    """The episode ids two runs of one scenario both have, sorted: the pairs of a paired comparison. An id hashes the
    task (item), user mode, temperature and sample or trial, never the framework, so one id is one item in both."""
    return sorted(set(mine) & set(theirs))


def baseline_of(frameworks) -> str | None:
    """The framework among `frameworks` the others are paired with: the one whose entry is the baseline (native)."""
    return next((f for f in frameworks if f in FRAMEWORKS and FRAMEWORKS.entry(f).baseline), None)


def compare_frameworks(store: Store, runs: dict[str, str], judges: dict[str, JudgeIdentity | None],
                       baselines: dict[str, str] | None = None) -> pd.DataFrame:
    """`compare_runs` of runs named by id: `runs` and `judges` map each framework to its run and labeller, `baselines`
    a row to its assistant's run with the kind's reference user."""
    frames = {framework: RunFrames(store, run_id, judges.get(framework)) for framework, run_id in runs.items()}
    return compare_runs(frames, {row: RunFrames(store, run_id) for row, run_id in (baselines or {}).items()})


def compare_runs(runs: dict[str, RunFrames], references: dict[str, RunFrames] | None = None) -> pd.DataFrame:
    """One row per framework (in the order given), each measured on its run's frames under its labeller.
    Every framework but the baseline (`baseline_of`) is paired with it, when it is among them. When every run is of
    one kind, its views add their cells (τ²'s: the task outcomes, the simulated user's faults and the
    paired reward); the other columns are the same for every kind. A row in `references` (row → its assistant's run
    with the kind's reference user) adds the kind's `simulator_gap`. The frame's `attrs["kind"]` names the kind, so
    its renderers ask the same views for the columns."""
    rows = []
    base, kind = baseline_of(runs), runs_kind(runs.values())
    views = kind_views(kind)
    for framework, run in runs.items():
        row = framework_row(run, framework)
        if views.compare_cells is not None:
            row.update(views.compare_cells(run))
        if base is not None and framework != base:
            row.update(paired_with_native(runs[base], run))
            if views.compare_paired is not None:
                row.update(views.compare_paired(run, runs[base]))
        if references and framework in references and views.simulator_gap is not None:
            row.update(views.simulator_gap(run, references[framework]))
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs["kind"] = kind
    return frame


def runs_kind(runs) -> str | None:
    """The scenario kind every run (`RunFrames`) is of (a comparison's runs are one scenario's); None when they
    differ, one is missing, or there are none."""
    kinds = {run.kind for run in runs}
    return kinds.pop() if len(kinds) == 1 else None


def label_mix_text(mix: dict, k: int = LABEL_MIX_TOP) -> str:
    """The top labels as `label 40% (25–57)`, most frequent first."""
    return "; ".join(f"{label} {v['share']:.0%} ({v['lo']:.0%}–{v['hi']:.0%})" for label, v in list(mix.items())[:k]) or "n/a"
