"""The realism statistics: bootstrap weights, JSD and its small-sample bias, weighted AUC, medians, giveaways."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from testbed.analysis.realism.discriminator import discriminate, giveaway_phrase, weighted_auc
from testbed.analysis.realism.measures import (
    bootstrap_jsd,
    bootstrap_median,
    bootstrap_ratio_of_sums,
    context_resample_weights,
    jensen_shannon,
    plug_in_jsd_bias,
    weighted_lower_median,
)


def test_resample_weights_draw_each_context_as_often_as_there_are_contexts():
    weights = context_resample_weights(50, 300, np.random.default_rng(0))
    assert weights.shape == (300, 50)
    assert (weights.sum(axis=1) == 50).all()
    assert weights.mean() == pytest.approx(1.0)
    assert (weights == 0).mean() == pytest.approx(math.exp(-1), abs=0.02)
    assert context_resample_weights(0, 10, np.random.default_rng(0)).shape == (10, 0)


def test_jensen_shannon_is_zero_for_one_mix_one_for_disjoint_ones_and_nan_without_counts():
    assert jensen_shannon(np.array([2, 4, 0]), np.array([1, 2, 0])) == pytest.approx(0.0)
    assert jensen_shannon(np.array([3, 0]), np.array([0, 5])) == pytest.approx(1.0)
    assert math.isnan(jensen_shannon(np.array([0, 0]), np.array([1, 2])))
    mixed = 0.5 * (0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25)) + 0.5 * math.log2(1 / 0.75)
    assert jensen_shannon(np.array([1, 1]), np.array([1, 0])) == pytest.approx(mixed)


def test_the_plug_in_bias_formula_matches_simulated_samples_of_one_mix():
    rng = np.random.default_rng(1)
    mix = rng.dirichlet(np.ones(8))
    values = [float(jensen_shannon(rng.multinomial(600, mix), rng.multinomial(300, mix))) for _ in range(2000)]
    assert np.mean(values) == pytest.approx(plug_in_jsd_bias(8, 600, 300), rel=0.15)


def test_weighted_auc_equals_sklearn_with_ties_and_counts_repeated_rows():
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 5, size=200).astype(float)
    positive = rng.integers(0, 2, size=200)
    assert weighted_auc(scores, positive, np.ones((1, 200)))[0] == pytest.approx(roc_auc_score(positive, scores))
    counts = rng.integers(0, 3, size=200)
    repeated = np.repeat(np.arange(200), counts)
    expected = roc_auc_score(positive[repeated], scores[repeated])
    assert weighted_auc(scores, positive, counts[None, :].astype(float))[0] == pytest.approx(expected)
    assert math.isnan(weighted_auc(scores, np.ones(200), np.ones((1, 200)))[0])


def test_medians_and_ratios_under_resampling():
    values = np.array([3.0, 1.0, 2.0, 10.0])
    assert weighted_lower_median(values, np.array([[1, 1, 1, 1], [0, 0, 0, 4], [2, 0, 1, 1]])).tolist() == [2.0, 10.0, 3.0]
    weights = context_resample_weights(4, 200, np.random.default_rng(3)).astype(float)
    point, lo, hi = bootstrap_median(values, weights)
    assert point == 2.5 and 1.0 <= lo <= hi <= 10.0
    ratio, lo, hi = bootstrap_ratio_of_sums(np.array([1.0, 3.0]), np.array([2.0, 2.0]),
                                            context_resample_weights(2, 200, np.random.default_rng(4)).astype(float))
    assert ratio == 1.0 and lo == pytest.approx(0.5) and hi == pytest.approx(1.5)
    assert all(math.isnan(v) for v in bootstrap_jsd(np.zeros((3, 8)), np.ones((3, 8)), np.ones((5, 3))))


def test_giveaways_name_the_largest_coefficients_with_the_phrase_of_their_sign():
    coefficients = {"log_words": 1.94, "thanks": -0.52, "question_marks": 0.81, "digit_share": 0.1}
    assert giveaway_phrase(coefficients) == "longer (+1.9), more questions (+0.8), fewer thanks (-0.5)"


def test_the_discriminator_separates_a_feature_shift_and_needs_enough_contexts():
    rng = np.random.default_rng(5)
    contexts = 100
    row_context = np.repeat(np.arange(contexts), 2)
    simulated = np.tile([0, 1], contexts)
    features = rng.normal(size=(2 * contexts, 19))
    features[simulated == 1, 0] += 3.0
    verdict = discriminate(features, simulated, row_context, folds=5, seed=0, permutations=50)
    assert verdict.auc > 0.95 and verdict.auc_lo <= verdict.auc <= verdict.auc_hi and verdict.auc_lo > 0.5
    assert verdict.auc_p == pytest.approx(1 / 51), "no within-context relabelling comes near a real shift"
    assert verdict.giveaways.startswith("longer (+")
    few = discriminate(features[:8], simulated[:8], row_context[:8], folds=5, seed=0)
    assert math.isnan(few.auc) and math.isnan(few.auc_p) and few.giveaways
