"""The realism AUC's interval and p-value under the null: humans against humans, the whole cross-validation refitted.

The interval before issue 40 resampled contexts of one fixed set of out-of-fold scores; it left out
the noise of fitting, so on human-against-human data it held 0.5 too rarely. These tests run a
small version of `benchmarks/realism_null.py` on synthetic features (a context shifts all of its
turns alike, and one turn per context is called real at random) and check the new interval
against the old one, plus the pieces it is built from: the batched fit is scikit-learn's fit, a
bootstrap weight is a repeated row, and a permutation never moves a label out of its context.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from testbed.analysis.realism.batched_logistic import out_of_fold_score_matrix
from testbed.analysis.realism.discriminator import (
    context_folds,
    null_interval,
    permutation_aucs,
    permutation_p,
    permuted_within_contexts,
    refit_bootstrap_auc,
    weighted_auc,
)
from testbed.analysis.realism.measures import context_resample_weights, interval

SPLITS = 120
CONTEXTS = 100
RESAMPLES = 50


def human_split(rng: np.random.Generator, contexts: int = CONTEXTS, features: int = 6):
    """Two or three human turns per context sharing the context's shift; one, at random, is called real."""
    sizes = 2 + rng.integers(0, 2, size=contexts)
    row_context = np.repeat(np.arange(contexts), sizes)
    x = rng.normal(size=(contexts, features))[row_context] + rng.normal(size=(len(row_context), features))
    real = np.r_[0, np.cumsum(sizes)[:-1]] + (rng.random(contexts) * sizes).astype(int)
    simulated = np.ones(len(row_context), dtype=np.int64)
    simulated[real] = 0
    return x, simulated, row_context


def old_interval(x, simulated, row_context, seed: int) -> tuple[float, float]:
    """Before issue 40: percentiles of the AUC over context resamples of fixed out-of-fold scores."""
    scores = out_of_fold_score_matrix(x, simulated[None, :], np.ones((1, len(simulated))),
                                      context_folds(row_context, folds=5, seed=seed))[0]
    weights = context_resample_weights(row_context.max() + 1, RESAMPLES, np.random.default_rng(seed)).astype(float)
    return interval(weighted_auc(scores, simulated, weights[:, row_context]))


@pytest.fixture(scope="module")
def null_runs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2024)
    out: dict[str, list] = {"auc": [], "new": [], "old": [], "p": []}
    for seed in range(SPLITS):
        x, simulated, row_context = human_split(rng)
        auc, null_aucs = permutation_aucs(x, simulated, row_context, folds=5, seed=seed, permutations=RESAMPLES)
        out["auc"].append(auc)
        out["new"].append(null_interval(auc, null_aucs))
        out["p"].append(permutation_p(auc, null_aucs))
        out["old"].append(old_interval(x, simulated, row_context, seed))
    return {k: np.array(v) for k, v in out.items()}


def _holds_half(intervals: np.ndarray) -> float:
    return float(((intervals[:, 0] <= 0.5) & (0.5 <= intervals[:, 1])).mean())


def test_under_the_null_the_new_interval_holds_one_half_at_about_95_percent_and_the_old_did_not(null_runs):
    # Binomial(120, 0.95) falls under 88 % with probability 0.0003; the old interval held 0.5 in about 82 %.
    assert _holds_half(null_runs["new"]) >= 0.88
    assert _holds_half(null_runs["old"]) < 0.88


def test_under_the_null_the_new_interval_is_as_wide_as_the_auc_varies_and_the_old_was_narrower(null_runs):
    spread = 2 * 1.96 * null_runs["auc"].std()
    new_width = (null_runs["new"][:, 1] - null_runs["new"][:, 0]).mean()
    old_width = (null_runs["old"][:, 1] - null_runs["old"][:, 0]).mean()
    assert new_width >= 0.85 * spread > old_width


def test_under_the_null_the_p_value_is_at_most_005_about_5_percent_of_the_time(null_runs):
    assert (null_runs["p"] <= 0.05).mean() <= 0.10
    assert null_runs["p"].min() >= 1 / (RESAMPLES + 1)


def test_a_real_shift_gets_the_smallest_p_value_and_an_interval_above_one_half():
    rng = np.random.default_rng(3)
    x, simulated, row_context = human_split(rng)
    x[simulated == 1, 0] += 1.5
    auc, null_aucs = permutation_aucs(x, simulated, row_context, folds=5, seed=0, permutations=RESAMPLES)
    assert auc > 0.7 and permutation_p(auc, null_aucs) == pytest.approx(1 / (RESAMPLES + 1))
    lo, hi = null_interval(auc, null_aucs)
    assert 0.5 < lo <= auc <= hi <= 1.0


def test_a_permutation_moves_labels_only_within_their_context():
    rng = np.random.default_rng(0)
    _, simulated, row_context = human_split(rng, contexts=30)
    permuted = permuted_within_contexts(simulated, row_context, 20, rng)
    for labels in permuted:
        assert (np.bincount(row_context, weights=labels) == np.bincount(row_context, weights=simulated)).all()
    assert (permuted != simulated).any()


def test_the_batched_fit_scores_as_scikit_learn_and_a_weight_is_a_repeated_row():
    rng = np.random.default_rng(1)
    x, simulated, row_context = human_split(rng, contexts=60)
    x[simulated == 1, 1] += 0.7
    folds = list(GroupKFold(n_splits=5, shuffle=True, random_state=0).split(x, simulated, row_context))
    counts = rng.integers(0, 3, size=len(simulated))
    batched = out_of_fold_score_matrix(x, np.vstack([simulated, simulated]),
                                       np.vstack([np.ones(len(simulated)), counts]), folds)
    for train, test in folds:
        model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", tol=1e-10, max_iter=5000))
        plain = model.fit(x[train], simulated[train]).predict_proba(x[test])[:, 1]
        assert batched[0, test] == pytest.approx(plain, abs=1e-5)
        repeated = np.repeat(train, counts[train])
        drawn = model.fit(x[repeated], simulated[repeated]).predict_proba(x[test])[:, 1]
        assert batched[1, test] == pytest.approx(drawn, abs=1e-5)


def test_the_refit_bootstrap_refits_per_resample_and_keeps_the_observed_auc_for_identity_weights():
    rng = np.random.default_rng(4)
    x, simulated, row_context = human_split(rng, contexts=60)
    weights = np.vstack([np.ones(60, dtype=np.int32), context_resample_weights(60, 5, np.random.default_rng(0))])
    aucs = refit_bootstrap_auc(x, simulated, row_context, weights, folds=5, seed=0)
    observed, _ = permutation_aucs(x, simulated, row_context, folds=5, seed=0, permutations=0)
    assert aucs[0] == pytest.approx(observed)
    assert len(np.unique(np.round(aucs[1:], 9))) == 5
