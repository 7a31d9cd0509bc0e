"""How sure the learned judge was of a verdict: the order in which people should label turns.

A verdict's margin is the probability that it is right: the judge's calibrated probability of the
label its own rule (`decision.decide_label`) decided: P(follow-up) when that reaches the threshold,
else the most probable other label. Since the label decides the follow-up verdict, a turn whose follow-up decision is in doubt is
in doubt here too. The least sure turns are those with the smallest margin (least-confidence
ordering, no parameter to tune). On the out-of-fold predictions of learned-3 (grouped CV on
`judges/training/labels.jsonl` and `labels-later.jsonl`), hand-labelling the 25 % of turns with
the smallest margin lifts the set to κ 0.835 / follow-up F1 0.808, against 0.812 / 0.789 for the
earlier margin, min(top-two label gap, 2·|P(follow-up) − threshold|).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from testbed.judges.learned.decision import decide_label
from testbed.judges.taxonomy import taxonomy


def margin(probabilities: Mapping[str, float] | None, p_followup: float, threshold: float) -> float:
    """The probability that the verdict is right: P(follow-up) when it reaches `threshold`, else the largest
    probability of another label; without a probability table, of the follow-up decision alone."""
    followup = taxonomy().followup_label
    if not probabilities or set(probabilities) == {followup}:
        return p_followup if p_followup >= threshold else 1.0 - p_followup
    table = {**probabilities, followup: p_followup}
    return table[decide_label(np.array(list(table.values())), list(table), threshold)]


def stored_margin(raw: str | None) -> float | None:
    """The margin of a stored learned-judge verdict (its `raw` JSON), or None for a verdict that holds no probability."""
    try:
        blob = json.loads(raw) if raw else None
        probabilities = blob.get("probabilities")
        table = {str(k): float(v) for k, v in probabilities.items()} if isinstance(probabilities, dict) else None
        return margin(table, float(blob["p_followup"]), float(blob.get("threshold", 0.5)))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
