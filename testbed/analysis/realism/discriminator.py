"""Can a classifier tell simulated user turns from real ones on the same contexts? The realism AUC.

A logistic regression on standardised surface features (`realism_features.SURFACE_FEATURES`) is
cross-validated with whole contexts held out together (sklearn `GroupKFold`, shuffled by the
seed), so that a context's real and simulated turns never sit on both sides of a split. The
out-of-fold scores give the ROC AUC (0.5: indistinguishable, 1.0: told apart every time), and a
bootstrap over contexts, as one weighted Mann–Whitney sum per resample, gives its interval. The
same model fitted on all rows names the giveaways from its standardised coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from testbed.analysis.realism.features import SURFACE_FEATURES

GIVEAWAY_COUNT = 3
"""How many features `giveaways` names."""
RESAMPLE_BLOCK = 64
"""Bootstrap resamples scored per block, bounding the (resamples × rows) weight matrix held at once."""


@dataclass(frozen=True)
class DiscriminatorResult:
    """The discriminator's verdict on one simulated condition against the real turns of its contexts."""

    auc: float
    """ROC AUC of the out-of-fold scores, simulated as the positive class; NaN when not computed."""
    auc_lo: float
    """2.5th percentile of the AUC over context bootstrap resamples."""
    auc_hi: float
    """97.5th percentile of the AUC over context bootstrap resamples."""
    giveaways: str
    """The strongest standardised coefficients as phrases, e.g. "longer (+1.9), more questions (+0.8)"."""
    coefficients: dict[str, float]
    """Every feature's standardised coefficient (positive: the simulator has more of it)."""


def _model() -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=2000))


def out_of_fold_scores(features: np.ndarray, simulated: np.ndarray, groups: np.ndarray, *, folds: int,
                       seed: int) -> np.ndarray:
    """Each row's probability of being simulated from a model that never saw its context.

    `groups` holds each row's context; rows come in the caller's order, which the caller keeps
    stable (the fold assignment depends only on the set of contexts and the seed).
    """
    scores = np.empty(len(simulated), dtype=np.float64)
    for train, test in GroupKFold(n_splits=folds, shuffle=True, random_state=seed).split(features, simulated, groups):
        model = _model()
        if len(np.unique(simulated[train])) < 2:
            scores[test] = 0.5
            continue
        model.fit(features[train], simulated[train])
        scores[test] = model.predict_proba(features[test])[:, 1]
    return scores


def weighted_auc(scores: np.ndarray, positive: np.ndarray, row_weights: np.ndarray) -> np.ndarray:
    """ROC AUC of `scores` for each row of `row_weights` (resamples × rows), ties counting one half.

    A weight is how many times a row is drawn; the AUC is the weighted Mann–Whitney statistic,
    computed for all resamples at once from one sort of the scores (tied scores pooled with
    `np.add.reduceat`). NaN for a resample without both classes.
    """
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    is_positive = positive[order].astype(np.float64)
    weights = row_weights[:, order]
    pos = np.add.reduceat(weights * is_positive, starts, axis=1)
    neg = np.add.reduceat(weights * (1.0 - is_positive), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    wins = (pos * (below + 0.5 * neg)).sum(axis=1)
    pairs = pos.sum(axis=1) * neg.sum(axis=1)
    return np.divide(wins, pairs, out=np.full(len(wins), np.nan), where=pairs > 0)


def bootstrap_auc(scores: np.ndarray, positive: np.ndarray, row_context: np.ndarray,
                  context_weights: np.ndarray) -> np.ndarray:
    """The AUC under each context resample: `context_weights` is (resamples × contexts) draw counts."""
    out = np.empty(len(context_weights), dtype=np.float64)
    for start in range(0, len(context_weights), RESAMPLE_BLOCK):
        block = context_weights[start:start + RESAMPLE_BLOCK][:, row_context].astype(np.float64)
        out[start:start + RESAMPLE_BLOCK] = weighted_auc(scores, positive, block)
    return out


def giveaway_phrase(coefficients: dict[str, float], count: int = GIVEAWAY_COUNT) -> str:
    """The `count` largest coefficients by size as "phrase (+x.x)", the phrase chosen by the sign."""
    phrases = {f.key: f for f in SURFACE_FEATURES}
    ranked = sorted(coefficients.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:count]
    return ", ".join(f"{phrases[k].more if v > 0 else phrases[k].fewer} ({v:+.1f})" for k, v in ranked)


def standardised_coefficients(features: np.ndarray, simulated: np.ndarray) -> dict[str, float]:
    """The logistic coefficients on standardised features, fitted on all rows, keyed by feature."""
    model = _model()
    model.fit(features, simulated)
    coefs = model[-1].coef_[0]
    return {f.key: float(c) for f, c in zip(SURFACE_FEATURES, coefs, strict=True)}


def discriminate(features: np.ndarray, simulated: np.ndarray, row_context: np.ndarray,
                 context_weights: np.ndarray, *, folds: int, seed: int) -> DiscriminatorResult:
    """Cross-validated AUC with its bootstrap interval, and the giveaways, for one condition.

    `row_context` is each row's context index (0..contexts-1) and `context_weights` the
    bootstrap's draw counts per context. With fewer contexts than folds, or one class missing, the
    AUC is NaN (the coefficients still come when both classes are present).
    """
    nan = float("nan")
    contexts = context_weights.shape[1] if context_weights.ndim == 2 else 0
    if len(np.unique(simulated)) < 2:
        return DiscriminatorResult(nan, nan, nan, "", {})
    coefficients = standardised_coefficients(features, simulated)
    phrase = giveaway_phrase(coefficients)
    if contexts < folds or folds < 2:
        return DiscriminatorResult(nan, nan, nan, phrase, coefficients)
    scores = out_of_fold_scores(features, simulated, row_context, folds=folds, seed=seed)
    auc = float(weighted_auc(scores, simulated, np.ones((1, len(scores))))[0])
    resampled = bootstrap_auc(scores, simulated, row_context, context_weights)
    lo, hi = (np.nanpercentile(resampled, [2.5, 97.5]) if np.isfinite(resampled).any() else (nan, nan))
    return DiscriminatorResult(auc, float(lo), float(hi), phrase, coefficients)
