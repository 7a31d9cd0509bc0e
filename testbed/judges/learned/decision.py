"""The learned judge's label rule: the most probable class, made to agree with the follow-up decision.

The judge owns this rule and the trainer calls it, so the threshold cross-validation chooses is
scored with exactly the decision the judge will make. It reads classes by name through the given
class order, never by position in the taxonomy, so a model saved with its classes in another order
decides the same labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from testbed.judges.taxonomy import taxonomy


def decide_label(p: np.ndarray, classes: Sequence[str], threshold: float) -> str:
    """The label of one turn from its class probabilities `p` (in `classes` order).

    The follow-up label when P(follow-up) ≥ `threshold`; otherwise the most probable class, or the
    second most probable when that is the follow-up label, so the label and the follow-up decision
    never disagree.
    """
    followup = taxonomy().followup_label
    order = np.argsort(-p)
    if p[list(classes).index(followup)] >= threshold:
        return followup
    top = classes[order[0]]
    return classes[order[1]] if top == followup else top
