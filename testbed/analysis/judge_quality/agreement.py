"""Agreement between annotators: Cohen's κ, Fleiss' κ, per-label precision/recall, confusion matrix.

Written out rather than imported so that the definitions are visible and tested against textbook
values; the published human–judge agreement for this task (κ = 0.726) is Cohen's κ.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's κ of two annotators over the same items; nan with no items, 1.0 when both are constant and equal."""
    if len(a) != len(b):
        raise ValueError("both annotators must label the same items")
    n = len(a)
    if n == 0:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float:
    """Fleiss' κ: `ratings[i]` holds every annotator's label for item i (same number per item)."""
    if not ratings:
        return math.nan
    raters = len(ratings[0])
    if raters < 2 or any(len(r) != raters for r in ratings):
        raise ValueError("every item needs the same number (≥ 2) of ratings")
    n = len(ratings)
    totals: Counter[str] = Counter()
    agreement = 0.0
    for item in ratings:
        counts = Counter(item)
        totals.update(counts)
        agreement += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
    p_bar = agreement / n
    p_e = sum((t / (n * raters)) ** 2 for t in totals.values())
    if p_e == 1.0:
        return 1.0 if p_bar == 1.0 else 0.0
    return (p_bar - p_e) / (1 - p_e)


def f1_binary(predicted: Sequence[bool], reference: Sequence[bool]) -> float:
    """F1 of the positive class (a genuine follow-up); nan when neither side has a positive."""
    tp = sum(p and r for p, r in zip(predicted, reference))
    fp = sum(p and not r for p, r in zip(predicted, reference))
    fn = sum(r and not p for p, r in zip(predicted, reference))
    return math.nan if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


@dataclass(frozen=True)
class Agreement:
    """Two annotators compared on their common items; `b` is the reference for precision and recall."""

    n: int
    kappa: float
    observed: float
    per_label: pd.DataFrame
    confusion: pd.DataFrame


def compare(a: Sequence[str], b: Sequence[str], labels: Sequence[str]) -> Agreement:
    """κ, raw agreement, per-label precision/recall/F1/support and the confusion matrix (rows a, columns b)."""
    rows = []
    for label in labels:
        tp = sum(x == label and y == label for x, y in zip(a, b))
        pred = sum(x == label for x in a)
        ref = sum(y == label for y in b)
        p = tp / pred if pred else math.nan
        r = tp / ref if ref else math.nan
        f = 2 * tp / (pred + ref) if pred + ref else math.nan
        rows.append({"label": label, "precision": p, "recall": r, "f1": f, "support": ref, "predicted": pred})
    used = [l for l in labels if l in set(a) | set(b)]
    confusion = pd.crosstab(pd.Categorical(a, categories=used), pd.Categorical(b, categories=used), dropna=False,
                            rownames=["a"], colnames=["b"])
    observed = sum(x == y for x, y in zip(a, b)) / len(a) if a else math.nan
    return Agreement(len(a), cohen_kappa(a, b), observed, pd.DataFrame(rows), confusion)
