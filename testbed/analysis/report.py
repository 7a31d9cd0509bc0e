"""The run report: per assistant model × dataset × user mode × temperature (× perturbation)."""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.frames import episodes_frame
from testbed.analysis.stats import wilson_interval
from testbed.store import Store

GROUP = ["assistant_model", "user_model", "dataset", "user_mode", "temperature", "perturbation"]


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
        "identical_to_question": same / len(done) if len(done) else math.nan,
        "identical_lo": same_lo,
        "identical_hi": same_hi,
    }


def report_frame(store: Store, run_id: str) -> pd.DataFrame:
    """The report as a frame; rates exclude errored episodes, and `errors` says how many there were."""
    frame = episodes_frame(store, run_id)
    if frame.empty:
        return pd.DataFrame(columns=GROUP + list(_group_row(frame).keys()))
    rows = [{**dict(zip(GROUP, keys)), **_group_row(g)} for keys, g in frame.groupby(GROUP, sort=True, dropna=False)]
    return pd.DataFrame(rows)


def error_reasons(store: Store, run_id: str, limit: int = 5) -> list[tuple[str, int]]:
    """The most frequent error reasons of a run, so a report never hides why episodes failed."""
    rows = store.conn.execute(
        "SELECT error_reason, COUNT(*) FROM episodes WHERE run_id=? AND status='error' GROUP BY error_reason ORDER BY 2 DESC LIMIT ?",
        (run_id, limit),
    )
    return [(r[0], r[1]) for r in rows]
