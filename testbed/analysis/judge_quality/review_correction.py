"""Corrected follow-up rates of reviewed labels: each stage corrected for its own errors, in its own band.

A reviewed verdict comes from the fast judge on the turns it was sure of (margin at or above the
review's cutoff) or from the reviewer on the turns it doubted. The fast judge's overall error
rates would be wrong for either part: on its sure band it errs far less than on average. So the
fast part is corrected with its error rates *within that band* on the labelled set
(`JudgeErrorRates.within(cutoff)`), and the reviewed part is taken as right (people, or a model
reviewer whose own errors are not measured here — the `corrected_with` column says so). The two
posteriors are combined by `testbed.analysis.judge_quality.correction.reviewed_rate`. Turns chosen for review but
not reviewed yet keep the fast verdict and are corrected with the fast part.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from testbed.analysis.judge_quality.correction import JudgeErrorRates, reviewed_rate
from testbed.analysis.frames import CONDITIONS, judge_labels
from testbed.judges.review import REVIEW, stage_of, stages
from testbed.store import Store
from testbed.store.frames import episodes_df
from testbed.store.labels import HUMAN
from testbed.store.records import JudgeIdentity

COLUMNS = ["followup_corrected", "corrected_lo", "corrected_hi", "reviewed_share"]
"""What the correction adds after the follow-up rate: the corrected rate, its interval, and the share the review decided."""


def review_counts(store: Store, run_id: str, who: JudgeIdentity) -> tuple[pd.DataFrame, float]:
    """Per condition group of finished episodes: follow-ups and scored turns decided by each stage, and the review's cutoff."""
    labels = judge_labels(store, run_id, who)
    episodes = episodes_df(store, run_id, exact=True)
    turns = labels.merge(episodes.loc[episodes.status == "done", ["episode_id", *CONDITIONS]], on="episode_id")
    turns = turns[turns.status == "scored"]
    reviewed = turns.raw.map(stage_of).eq(REVIEW)
    followup = turns.followup.fillna(0).astype(bool)
    parts = pd.DataFrame({"x_review": followup & reviewed, "n_review": reviewed, "x_fast": followup & ~reviewed, "n_fast": ~reviewed})
    counts = parts.groupby([turns[c] for c in CONDITIONS], sort=True, dropna=False).sum().reset_index()
    return counts, _cutoff(labels.raw)


def with_reviewed_corrected_rates(frame: pd.DataFrame, store: Store, run_id: str, who: JudgeIdentity,
                                  rates: JudgeErrorRates) -> pd.DataFrame:
    """The report with each group's follow-up rate corrected stage by stage (the module docstring says how)."""
    if "followup_rate" not in frame or frame.empty:
        return frame
    counts, cutoff = review_counts(store, run_id, who)
    band = rates.within(cutoff) if math.isfinite(cutoff) else None
    keyed = {tuple(r[c] for c in CONDITIONS): r for r in counts.to_dict("records")}
    rows = []
    for row in frame[CONDITIONS].to_dict("records"):
        c = keyed.get(tuple(row[k] for k in CONDITIONS))
        if c is None:
            rows.append((math.nan, math.nan, math.nan, math.nan))
            continue
        n_fast, n_review = int(c["n_fast"]), int(c["n_review"])
        out = reviewed_rate((int(c["x_fast"]), n_fast, band if band is not None else rates), (int(c["x_review"]), n_review, None))
        share = n_review / (n_fast + n_review) if n_fast + n_review else math.nan
        rows.append((out.corrected, out.lo, out.hi, share))
    added = pd.DataFrame(rows, columns=COLUMNS, index=frame.index)
    at = list(frame.columns).index("followup_rate") + 1
    while at < len(frame.columns) and frame.columns[at] in ("followup_lo", "followup_hi"):
        at += 1
    out = pd.concat([frame.iloc[:, :at], added, frame.iloc[:, at:]], axis=1)
    reviewer = stages(who)[-1]
    taken = "a person, taken as right" if reviewer.judge == HUMAN else f"{reviewer}, taken as right (its errors are not measured here)"
    out["corrected_with"] = f"fast part: {band.source if band is not None else rates.source}; reviewed part: {taken}"
    return out


def _cutoff(raws: pd.Series) -> float:
    """The review's cutoff margin, as the reviewed verdicts record it (inf when every turn was reviewed)."""
    for raw in raws.dropna():
        try:
            value = json.loads(raw).get("cutoff")
        except (ValueError, AttributeError):
            continue
        return math.inf if value is None else float(value)
    return math.inf
