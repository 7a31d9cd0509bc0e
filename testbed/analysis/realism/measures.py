"""The realism table's statistics, each bootstrapped over contexts as one matrix product.

A bootstrap resample draws contexts with replacement; it is stored as a (resamples × contexts)
matrix of draw counts. Every measure first reduces the turns to per-context sums (label counts,
cosine sums, a length ratio), so a resampled value is the count matrix times those sums: 1,000
resamples over 10,000 contexts cost a few matrix products instead of 1,000 pandas group-bys.
"""

from __future__ import annotations

import math

import numpy as np

INTERVAL_PERCENTILES = (2.5, 97.5)
"""The bootstrap percentiles reported as `_lo` and `_hi` (a 95 % interval)."""
_WEIGHT_BLOCK = 128


def context_resample_weights(contexts: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Draw counts of each context in each bootstrap resample: (resamples × contexts), each row summing to `contexts`.

    Exactly the multinomial of resampling contexts with replacement, drawn as indices and counted
    with one `np.bincount` per block of resamples.
    """
    out = np.zeros((max(resamples, 0), contexts), dtype=np.int32)
    if contexts == 0:
        return out
    for start in range(0, resamples, _WEIGHT_BLOCK):
        rows = min(_WEIGHT_BLOCK, resamples - start)
        draws = rng.integers(0, contexts, size=(rows, contexts)) + (np.arange(rows) * contexts)[:, None]
        out[start:start + rows] = np.bincount(draws.ravel(), minlength=rows * contexts).reshape(rows, contexts)
    return out


def interval(values: np.ndarray) -> tuple[float, float]:
    """The 95 % percentile interval of bootstrap values, ignoring NaN resamples; (nan, nan) when none is finite."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return (math.nan, math.nan)
    lo, hi = np.percentile(finite, INTERVAL_PERCENTILES)
    return (float(lo), float(hi))


def jensen_shannon(first_counts: np.ndarray, second_counts: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence in bits (so in [0, 1]) between count vectors along the last axis.

    Counts are normalised to mixes first; NaN where either side has no counts. This is the plug-in
    estimate: two samples of the same distribution give a positive value, about
    `plug_in_jsd_bias` on average.
    """
    first = np.asarray(first_counts, dtype=np.float64)
    second = np.asarray(second_counts, dtype=np.float64)
    first_total = first.sum(axis=-1, keepdims=True)
    second_total = second.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = first / first_total
        q = second / second_total
        m = (p + q) / 2
        left = np.where(p > 0, p * np.log2(p / m), 0.0).sum(axis=-1)
        right = np.where(q > 0, q * np.log2(q / m), 0.0).sum(axis=-1)
    value = np.clip((left + right) / 2, 0.0, 1.0)
    empty = (first_total[..., 0] == 0) | (second_total[..., 0] == 0)
    return np.where(empty, np.nan, value)


def plug_in_jsd_bias(categories: int, first_n: int, second_n: int) -> float:
    """The expected plug-in JSD (bits) between two samples of sizes n1, n2 drawn from one distribution.

    To first order JSD ≈ Σ (p − q)² / (8 m) nats, and E[(p̂ − q̂)²] = p(1 − p)(1/n1 + 1/n2), giving
    (k − 1)(1/n1 + 1/n2) / (8 ln 2) bits over k categories that occur. A measured JSD near this
    value is indistinguishable from sampling noise; with 300 contexts and 8 labels it is about 0.006.
    """
    if first_n <= 0 or second_n <= 0:
        return math.nan
    return (categories - 1) * (1 / first_n + 1 / second_n) / (8 * math.log(2))


def bootstrap_jsd(first_counts: np.ndarray, second_counts: np.ndarray,
                  weights: np.ndarray) -> tuple[float, float, float]:
    """JSD between two (contexts × labels) count matrices' totals, with its interval over context resamples."""
    point = float(jensen_shannon(first_counts.sum(axis=0), second_counts.sum(axis=0)))
    if math.isnan(point):
        return (math.nan, math.nan, math.nan)
    resampled = jensen_shannon(weights @ first_counts, weights @ second_counts)
    return (point, *interval(resampled))


def bootstrap_ratio_of_sums(numerators: np.ndarray, denominators: np.ndarray,
                            weights: np.ndarray) -> tuple[float, float, float]:
    """Σ numerators / Σ denominators over contexts (e.g. a mean over turns), with its interval."""
    total = float(denominators.sum())
    if total == 0:
        return (math.nan, math.nan, math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        resampled = (weights @ numerators) / (weights @ denominators)
    return (float(numerators.sum()) / total, *interval(resampled))


def weighted_lower_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """For each row of `weights` (resamples × values), the lower median of `values` drawn that many times."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[:, order], axis=1)
    half = cumulative[:, -1:] / 2
    position = np.argmax(cumulative >= half, axis=1)
    return np.where(cumulative[:, -1] > 0, values[order][position], np.nan)


def bootstrap_median(values: np.ndarray, weights: np.ndarray) -> tuple[float, float, float]:
    """The median of per-context values, with its interval from the resamples' lower medians."""
    if len(values) == 0:
        return (math.nan, math.nan, math.nan)
    resampled = np.concatenate([weighted_lower_median(values, weights[s:s + _WEIGHT_BLOCK])
                                for s in range(0, len(weights), _WEIGHT_BLOCK)] or [np.empty(0)])
    return (float(np.median(values)), *interval(resampled))
