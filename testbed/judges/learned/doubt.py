"""How sure the learned judge was of a verdict: the order in which people should label turns.

A verdict is two decisions, so its margin is the smaller of two: the gap between the two most
probable labels (the 8-way label) and twice the distance of P(follow-up) from the threshold (the
follow-up decision). The factor 2 puts the two on one scale and was chosen by cross-validation on
the training labels (`judges/training/labels.jsonl`, never the gold dev set): with the out-of-fold
predictions of learned-2, hand-labelling the 20 % of turns with the smallest margin lifts the set
to κ 0.768 / follow-up F1 0.742, against 0.756 / 0.726 when ordered by the follow-up distance
alone and 0.784 / 0.719 by the label gap alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

FOLLOWUP_WEIGHT = 2.0


def margin(probabilities: Mapping[str, float] | None, p_followup: float, threshold: float) -> float:
    """The verdict's margin: min(top-two label gap, 2·|P(follow-up) − threshold|); without probabilities, the second only."""
    followup = FOLLOWUP_WEIGHT * abs(p_followup - threshold)
    if not probabilities or len(probabilities) < 2:
        return followup
    first, second = sorted(probabilities.values(), reverse=True)[:2]
    return min(first - second, followup)


def stored_margin(raw: str | None) -> float | None:
    """The margin of a stored learned-judge verdict (its `raw` JSON), or None for a verdict that holds no probability."""
    try:
        blob = json.loads(raw) if raw else None
        probabilities = blob.get("probabilities")
        table = {str(k): float(v) for k, v in probabilities.items()} if isinstance(probabilities, dict) else None
        return margin(table, float(blob["p_followup"]), float(blob.get("threshold", 0.5)))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
