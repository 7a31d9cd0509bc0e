"""Can a classifier tell simulated user turns from real ones on the same contexts? The realism AUC and its test.

A logistic regression on standardised surface features (`realism_features.SURFACE_FEATURES`) is
cross-validated with whole contexts held out together (sklearn `GroupKFold`, shuffled by the
seed), so that a context's real and simulated turns never sit on both sides of a split. The
out-of-fold scores give the ROC AUC (0.5: indistinguishable, 1.0: told apart every time). The same
model fitted on all rows names the giveaways from its standardised coefficients.

How sure the AUC is comes from refitting the whole cross-validation, never from resampling one
set of out-of-fold scores: those scores already carry the noise of fitting on these contexts, and
a bootstrap that keeps them fixed leaves that noise out, so under the null its interval was too
narrow (one excluded 0.5 on human-against-human data; `benchmarks/realism_null.py` measures it).

- `auc_p`, the permutation p-value of "the simulator's turns are exchangeable with the real ones".
  The labels are permuted *within each context*: under that null a context's real turn and its
  simulated turns are draws from one distribution given the context, so any reshuffle of which of
  them is called real is as likely as the observed one. Permuting across contexts would not be: a
  context's question and answer shape its turns (the overlap features read them), and contexts
  differ in how many simulated turns they hold, so a global shuffle would also break the link
  between context and class mix that the observed data keeps, and test more than realism. Each
  permutation refits the grouped cross-validation on the same folds (the folds depend only on the
  contexts) and p = (1 + #{AUC_perm ≥ AUC_obs}) / (1 + permutations), one-sided: an AUC below 0.5
  out of fold is noise, not a simulator more human than humans.
- `auc_lo`–`auc_hi`, the 95 % interval, from the same permuted AUCs: the observed AUC moved by the
  null's spread around 0.5, `[0.5 + AUC − q97.5, 0.5 + AUC − q2.5]` of the permuted AUCs and the observed
  one, clipped to [0, 1]. It holds 0.5 exactly when the AUC lies between those quantiles (the two-sided permutation
  test at 5 % keeps the null), so under the null it covers 0.5 at the nominal rate by construction.
  It is centred for the negative bias of a cross-validated AUC at no signal (the permuted AUCs'
  median lies a little under 0.5), so an AUC a little under 0.5 gets an interval around 0.5.
  Away from the null it keeps the null's width, which is about the AUC's own sampling spread
  until the AUC nears 1, where that spread narrows and the interval is wider than it needs to be.
  Why not the refit bootstrap (`refit_bootstrap_auc`: contexts resampled, the cross-validation
  refitted per resample): it is honest too, but wider than it needs to be, and it costs a second
  set of refits. On 200 human-against-human splits of 300 contexts (`benchmarks/realism_null.py`)
  the interval here held 0.5 in 94.5 % (mean width 0.113), the refit bootstrap in 100 % (0.139),
  the fixed-score bootstrap it replaces in 82.0 % (0.081); p ≤ 0.05 in 6.0 %.

Every refit is one problem of `batched_logistic.out_of_fold_score_matrix`: a few hundred refits
cost about as much as a few dozen scikit-learn fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from testbed.analysis.realism.batched_logistic import out_of_fold_score_matrix
from testbed.analysis.realism.features import SURFACE_FEATURES

GIVEAWAY_COUNT = 3
"""How many features `giveaways` names."""
PERMUTATIONS = 200
"""Label permutations (and bootstrap refits, where asked for) by default: p-values to 1/201, quantiles to ±1.5 %."""
INTERVAL_QUANTILES = (2.5, 97.5)
"""The null quantiles (percent) that bound the 95 % interval."""


@dataclass(frozen=True)
class DiscriminatorResult:
    """The discriminator's verdict on one simulated condition against the real turns of its contexts."""

    auc: float
    """ROC AUC of the out-of-fold scores, simulated as the positive class; NaN when not computed."""
    auc_lo: float
    """Lower end of the 95 % interval: 0.5 + AUC − the 97.5th percentile of the within-context permutation AUCs (≥ 0)."""
    auc_hi: float
    """Upper end of the 95 % interval: 0.5 + AUC − the 2.5th percentile of the within-context permutation AUCs (≤ 1)."""
    auc_p: float
    """One-sided permutation p-value of AUC under "simulated and real turns are exchangeable within a context"."""
    giveaways: str
    """The strongest standardised coefficients as phrases, e.g. "longer (+1.9), more questions (+0.8)"."""
    coefficients: dict[str, float]
    """Every feature's standardised coefficient (positive: the simulator has more of it)."""


def _model() -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=2000))


def context_folds(row_context: np.ndarray, *, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train rows, test rows) per fold, whole contexts held out together; depends only on the contexts and the seed."""
    rows = np.zeros((len(row_context), 1))
    return list(GroupKFold(n_splits=folds, shuffle=True, random_state=seed).split(rows, groups=row_context))


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


def row_aucs(scores: np.ndarray, positive: np.ndarray, row_weights: np.ndarray) -> np.ndarray:
    """The weighted AUC of each problem's own scores, labels and weights (all problems × rows)."""
    return np.array([weighted_auc(s, p, w[None, :])[0] for s, p, w in zip(scores, positive, row_weights)])


def permuted_within_contexts(labels: np.ndarray, row_context: np.ndarray, permutations: int,
                             rng: np.random.Generator) -> np.ndarray:
    """`permutations` relabellings (permutations × rows), each shuffling the labels among each context's rows only."""
    by_context = np.argsort(row_context, kind="stable")
    shuffled = np.argsort(row_context[None, :] + rng.random((permutations, len(labels))), axis=1)
    out = np.empty((permutations, len(labels)), dtype=labels.dtype)
    out[:, by_context] = labels[shuffled]
    return out


def cross_validated_aucs(features: np.ndarray, labels: np.ndarray, weights: np.ndarray,
                         folds: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The grouped cross-validated AUC of each problem (labels and row multiplicities, problems × rows), refitted."""
    scores = out_of_fold_score_matrix(features, labels, weights, folds)
    return row_aucs(scores, labels, weights)


def permutation_aucs(features: np.ndarray, simulated: np.ndarray, row_context: np.ndarray, *, folds: int, seed: int,
                     permutations: int) -> tuple[float, np.ndarray]:
    """The observed cross-validated AUC and the AUCs of `permutations` within-context relabellings, all refitted."""
    split = context_folds(row_context, folds=folds, seed=seed)
    rng = np.random.default_rng([seed, 1])
    labels = np.vstack([simulated[None, :], permuted_within_contexts(simulated, row_context, permutations, rng)])
    aucs = cross_validated_aucs(features, labels, np.ones(labels.shape), split)
    return float(aucs[0]), aucs[1:]


def refit_bootstrap_auc(features: np.ndarray, simulated: np.ndarray, row_context: np.ndarray,
                        context_weights: np.ndarray, *, folds: int, seed: int) -> np.ndarray:
    """The cross-validated AUC refitted on each context resample (`context_weights`: resamples × contexts counts).

    A context drawn twice counts twice in fitting and scoring and stays in its one fold, so it is
    never on both sides of a split; the folds are the full data's.
    """
    split = context_folds(row_context, folds=folds, seed=seed)
    weights = context_weights[:, row_context].astype(np.float64)
    labels = np.broadcast_to(simulated, weights.shape)
    return cross_validated_aucs(features, labels, weights, split)


def null_interval(auc: float, null_aucs: np.ndarray) -> tuple[float, float]:
    """`[0.5 + auc − q97.5, 0.5 + auc − q2.5]`, within [0, 1], the quantiles over the null AUCs and the observed one
    (under the null all of them are exchangeable, so the observed AUC falls outside the quantiles 5 % of the time
    for any number of permutations): holds 0.5 exactly when the two-sided test keeps the null. (nan, nan) without
    an AUC or a finite null AUC."""
    finite = null_aucs[np.isfinite(null_aucs)]
    if not len(finite) or math.isnan(auc):
        return (math.nan, math.nan)
    low, high = np.percentile(np.r_[auc, finite], INTERVAL_QUANTILES)
    return (max(0.0, 0.5 + auc - float(high)), min(1.0, 0.5 + auc - float(low)))


def permutation_p(auc: float, null_aucs: np.ndarray) -> float:
    """(1 + #{null AUC ≥ auc}) / (1 + #null): never 0, exact for a finite set of permutations."""
    finite = null_aucs[np.isfinite(null_aucs)]
    if math.isnan(auc) or not len(finite):
        return math.nan
    return float((1 + np.count_nonzero(finite >= auc - 1e-12)) / (1 + len(finite)))


def giveaway_phrase(coefficients: dict[str, float], count: int = GIVEAWAY_COUNT) -> str:
    """The `count` largest coefficients by size as "phrase (+x.x)", the phrase chosen by the sign."""
    phrases = {f.key: f for f in SURFACE_FEATURES}
    ranked = sorted(coefficients.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:count]
    return ", ".join(f"{phrases[k].more if v > 0 else phrases[k].fewer} ({v:+.1f})" for k, v in ranked)


def standardised_coefficients(features: np.ndarray, simulated: np.ndarray) -> dict[str, float]:
    """The logistic coefficients on standardised features, fitted on all rows, keyed by feature."""
    model = _model()
    with threadpool_limits(limits=1, user_api="blas"):
        model.fit(features, simulated)
    coefs = model[-1].coef_[0]
    return {f.key: float(c) for f, c in zip(SURFACE_FEATURES, coefs, strict=True)}


def discriminate(features: np.ndarray, simulated: np.ndarray, row_context: np.ndarray, *, folds: int, seed: int,
                 permutations: int = PERMUTATIONS) -> DiscriminatorResult:
    """Cross-validated AUC with its permutation p-value and interval, and the giveaways, for one condition.

    `row_context` is each row's context index (0..contexts-1). With fewer contexts than folds, or
    one class missing, the AUC is NaN (the coefficients still come when both classes are present);
    with no permutations the p-value and interval are NaN.
    """
    nan = math.nan
    contexts = len(np.unique(row_context))
    if len(np.unique(simulated)) < 2:
        return DiscriminatorResult(nan, nan, nan, nan, "", {})
    coefficients = standardised_coefficients(features, simulated)
    phrase = giveaway_phrase(coefficients)
    if contexts < folds or folds < 2:
        return DiscriminatorResult(nan, nan, nan, nan, phrase, coefficients)
    auc, null_aucs = permutation_aucs(features, simulated, row_context, folds=folds, seed=seed,
                                      permutations=max(permutations, 0))
    lo, hi = null_interval(auc, null_aucs)
    return DiscriminatorResult(auc, lo, hi, permutation_p(auc, null_aucs), phrase, coefficients)
