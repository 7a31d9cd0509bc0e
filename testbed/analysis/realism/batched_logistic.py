"""Many weighted logistic regressions on one feature matrix, fitted at once: the discriminator refitted per resample.

The realism discriminator is `StandardScaler` then `LogisticRegression(class_weight="balanced")`
(L2, C = 1), cross-validated over grouped folds. An honest interval and p-value refit that whole
procedure hundreds of times on permuted labels or resampled contexts; with scikit-learn that is a
few hundred thousand small fits. Here every refit of a fold shares the fold's rows and differs only
in its labels and its row weights (how often a bootstrap draws each row), so all of them are
solved together by Newton's method: one matrix product gives every problem's gradient, one more
every Hessian, and `np.linalg.solve` the steps. The matrices are small, so BLAS runs on one thread
(`threadpool_limits`): on a busy two-core machine its threads waiting on each other made the same
fits twelve times slower.

Each problem solves exactly scikit-learn's problem, so the scores match its `predict_proba`:
a weight is a row's multiplicity (a row drawn twice counts as two rows: in the scaler's mean and
variance, in the balanced class weights `n / (2 n_class)` and in the loss). Standardising inside a
problem changes only the penalty: in the globally standardised coordinates `g` the problem's own
standardisation divides by its spread `s`, so the penalty `½‖β_z‖²` on standardised coefficients is
`½ Σ s_j² β_j²` on coefficients of `g`, and the fit never forms a standardised copy per problem.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

NEWTON_STEPS = 50
"""Newton iterations at most; a step below `STEP_TOLERANCE` everywhere ends the fit sooner."""
STEP_TOLERANCE = 1e-9
"""The largest coefficient change at which a fit counts as converged."""
HALVINGS = 20
"""Step halvings tried where a full Newton step would raise a problem's objective."""
PROBLEM_BLOCK = 256
"""Problems fitted together, bounding the (problems × rows × features²) work held at once."""


def _objective(design: np.ndarray, theta: np.ndarray, labels: np.ndarray, weights: np.ndarray,
               penalty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each problem's penalised weighted log-loss at `theta`, and the linear predictor it was computed from."""
    eta = theta @ design.T
    softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
    loss = (weights * (softplus - labels * eta)).sum(axis=1)
    return loss + 0.5 * (penalty * theta * theta).sum(axis=1), eta


def fit_logistic(design: np.ndarray, labels: np.ndarray, weights: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """Coefficients (problems × columns) minimising each problem's weighted log-loss plus ½ Σ penalty·θ².

    `design` (rows × columns) is shared, its last column the intercept's ones; `labels` and
    `weights` are (problems × rows), `penalty` (problems × columns) with 0 for the intercept.
    Newton's method with step halving; the problem is strictly convex wherever every penalty but
    the intercept's is positive and some weight is, so each has one minimum. A problem leaves the
    batch once its step is below `STEP_TOLERANCE` (permuted labels converge in about 4 steps, a
    separable observed condition takes 12). The Hessian, the one large product, is formed in
    float32: it only steers the steps, and the gradient, which decides where they stop, stays float64.
    """
    problems, columns = labels.shape[0], design.shape[1]
    outer = (design[:, :, None] * design[:, None, :]).reshape(len(design), columns * columns).astype(np.float32)
    theta = np.zeros((problems, columns))
    current, eta = _objective(design, theta, labels, weights, penalty)
    active = np.arange(problems)
    diagonal = np.arange(columns)
    for _ in range(NEWTON_STEPS):
        y, w, pen, at = labels[active], weights[active], penalty[active], theta[active]
        p = 1.0 / (1.0 + np.exp(-eta))
        gradient = (w * (p - y)) @ design + pen * at
        curvature = (w * p * (1.0 - p)).astype(np.float32)
        hessian = (curvature @ outer).astype(np.float64).reshape(len(active), columns, columns)
        hessian[:, diagonal, diagonal] += pen
        step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        size = np.ones(len(active))
        for _ in range(HALVINGS):
            trial, trial_eta = _objective(design, at - size[:, None] * step, y, w, pen)
            worse = trial > current[active] + 1e-12 * np.abs(current[active])
            if not worse.any():
                break
            size = np.where(worse, size / 2, size)
        moved = size[:, None] * step
        theta[active] = at - moved
        current[active] = trial
        going = np.abs(moved).max(axis=1) >= STEP_TOLERANCE
        active, eta = active[going], trial_eta[going]
        if not len(active):
            break
    return theta


def _fold_scores(features: np.ndarray, labels: np.ndarray, weights: np.ndarray, train: np.ndarray,
                 test: np.ndarray) -> np.ndarray:
    """Each problem's probability of the positive class for the `test` rows, fitted on its weighted `train` rows."""
    x, w, y = features[train], weights[:, train], labels[:, train].astype(np.float64)
    positives = (w * y).sum(axis=1)
    negatives = (w * (1.0 - y)).sum(axis=1)
    usable = (positives > 0) & (negatives > 0)
    total = positives + negatives
    with np.errstate(divide="ignore", invalid="ignore"):
        balanced = np.where(y > 0, (total / (2 * positives))[:, None], (total / (2 * negatives))[:, None])
    balanced = np.where(usable[:, None], balanced * w, 0.0)
    weight_sum = np.where(usable, w.sum(axis=1), 1.0)
    mean = (w @ x) / weight_sum[:, None]
    variance = (w @ (x * x)) / weight_sum[:, None] - mean * mean
    spread2 = np.where(variance > 1e-12, variance, 1.0)
    design = np.c_[x, np.ones(len(x))]
    penalty = np.c_[spread2, np.where(usable, 0.0, 1.0)]
    theta = fit_logistic(design, y, balanced, penalty)
    scores = 1.0 / (1.0 + np.exp(-(theta @ np.c_[features[test], np.ones(len(test))].T)))
    scores[~usable] = 0.5
    return scores


def out_of_fold_score_matrix(features: np.ndarray, labels: np.ndarray, weights: np.ndarray,
                             folds: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Out-of-fold scores (problems × rows) of the standardised, class-balanced logistic regression.

    Problem k has its own `labels[k]` and row multiplicities `weights[k]` (both problems × rows);
    every problem uses the same `folds` (train rows, test rows). A problem whose training rows lack
    a class scores its test rows 0.5, as the single fit does. Features are standardised once
    globally for conditioning; the scores do not depend on it.
    """
    centre = features.mean(axis=0)
    scale = features.std(axis=0)
    standard = (features - centre) / np.where(scale > 0, scale, 1.0)
    weights = np.asarray(weights, dtype=np.float64)
    scores = np.empty(labels.shape, dtype=np.float64)
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, labels.shape[0], PROBLEM_BLOCK):
            block = slice(start, start + PROBLEM_BLOCK)
            for train, test in folds:
                scores[block, test] = _fold_scores(standard, labels[block], weights[block], train, test)
    return scores
