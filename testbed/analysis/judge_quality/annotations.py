"""Line up several annotators' latest verdicts on the same turns, for agreement statistics."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.judge_quality.agreement import cohen_kappa, compare
from testbed.judges.taxonomy import taxonomy
from testbed.store import Store
from testbed.store.labels import labels_frame, resolve_identity

FOLLOWUP_SUFFIX = "|followup"


def common_labels(store: Store, run_id: str, selectors: list[str]) -> pd.DataFrame:
    """One row per turn scored by every selector: a label column per selector (None for binary judges)
    and a `<selector>|followup` column; unscored turns drop out."""
    merged = None
    for sel in selectors:
        who = resolve_identity(store, run_id, sel)
        f = labels_frame(store, run_id, who)
        f = f[f.status == "scored"][["episode_id", "turn_index", "label", "followup"]]
        f = f.rename(columns={"label": sel, "followup": sel + FOLLOWUP_SUFFIX})
        merged = f if merged is None else merged.merge(f, on=["episode_id", "turn_index"])
    assert merged is not None
    return merged.reset_index(drop=True)


def binary_and_label_agreement(frame: pd.DataFrame, a: str, b: str) -> dict:
    """Binary follow-up κ always; 8-way comparison when both annotators gave labels."""
    fa = [str(bool(x)) for x in frame[a + FOLLOWUP_SUFFIX]]
    fb = [str(bool(x)) for x in frame[b + FOLLOWUP_SUFFIX]]
    both_labelled = frame[a].notna().all() and frame[b].notna().all() and len(frame) > 0
    labels = compare(list(frame[a]), list(frame[b]), taxonomy().labels) if both_labelled else None
    return {"n": len(frame), "binary_kappa": cohen_kappa(fa, fb), "labels": labels}
