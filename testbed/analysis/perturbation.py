"""Do simulated users read the answer? Paired comparison of perturbed and unperturbed probe episodes.

Each perturbed episode is paired with the unperturbed one of the same item, user mode,
temperature and sample: the answer they saw differs only by the perturbation. Reported: how many
user turns changed at all, and the follow-up rate under each condition on the same pairs.
"""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.frames import episodes_frame, judge_labels, normalise
from testbed.analysis.stats import wilson_interval
from testbed.store import Store
from testbed.store.labels import JudgeIdentity

PAIR = ["item_id", "dataset", "user_model", "assistant_model", "user_mode", "temperature", "sample_index"]
"""What a perturbed episode shares with its unperturbed twin: it saw the same answer, perturbed."""


def perturbation_effects(store: Store, run_id: str, judge: JudgeIdentity | None) -> pd.DataFrame:
    """One row per perturbation × user mode × temperature: pairs, share changed, follow-up rates and their difference."""
    frame = episodes_frame(store, run_id)
    frame = frame[frame.status == "done"]
    if judge is not None:
        labels = judge_labels(store, run_id, judge)
        labels = labels[labels.status == "scored"][["episode_id", "turn_index", "followup"]]
        frame = frame.merge(labels, left_on=["episode_id", "user_turn_index"], right_on=["episode_id", "turn_index"], how="left")
    else:
        frame = frame.assign(followup=math.nan)
    base = frame[frame.perturbation == "none"]
    rows = []
    for name, perturbed in frame[frame.perturbation != "none"].groupby("perturbation"):
        pairs = perturbed.merge(base, on=PAIR, suffixes=("", "_base"))
        for (mode, temperature), g in pairs.groupby(["user_mode", "temperature"]):
            changed = int(sum(normalise(a) != normalise(b) for a, b in zip(g.user_turn.fillna(""), g.user_turn_base.fillna(""))))
            judged = g[g.followup.notna() & g.followup_base.notna()]
            after, before = int(judged.followup.astype(bool).sum()), int(judged.followup_base.astype(bool).sum())
            n = len(judged)
            lo, hi = wilson_interval(changed, len(g))
            rows.append({
                "perturbation": name, "user_mode": mode, "temperature": temperature, "pairs": len(g),
                "changed": changed / len(g), "changed_lo": lo, "changed_hi": hi, "judged_pairs": n,
                "followup_none": before / n if n else math.nan, "followup_perturbed": after / n if n else math.nan,
                "followup_change": (after - before) / n if n else math.nan,
            })
    return pd.DataFrame(rows)
