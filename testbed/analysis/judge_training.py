"""Training the learned judge: grouped cross-validation by question, a seeded fit, the model file.

Model choice (the regularisation strength C and class weighting) and the follow-up threshold are
chosen on out-of-fold predictions of a GroupKFold by question, so no question's turns are both
trained on and scored. Nothing here reads the gold dev set: that is scored once, afterwards, by
`testbed eval-judge`. scikit-learn is needed to train only; judging uses the saved weights.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from testbed.analysis.agreement import cohen_kappa, compare, f1_binary
from testbed.analysis.correction import JudgeErrorRates
from testbed.judges.learned.embedding import StaticEmbedder
from testbed.judges.learned.features import featurise
from testbed.judges.learned.model import LinearModel
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput

GRID_C = (0.01, 0.03, 0.1, 0.3, 1.0)
WEIGHTS = (None, "balanced")
FOLDS = 5


@dataclass(frozen=True)
class Labelled:
    """Labelled turns as the trainer sees them: features, labels, the question each turn answers."""

    x: np.ndarray
    labels: list[str]
    groups: list[str]
    rows: list[dict]


def load_labelled(path: Path, embedder: StaticEmbedder) -> Labelled:
    """Features and labels of a labelled JSONL file (the labelset's `label`, `question`, `assistant`, `user_turn`)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = [JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"]) for r in rows]
    x, _ = featurise(items, embedder)
    return Labelled(x, [r["label"] for r in rows], [r["question"] for r in rows], rows)


def _fit(x: np.ndarray, y: list[str], c: float, weight, seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=c, class_weight=weight, max_iter=3000, random_state=seed).fit(scaler.transform(x), y)
    return scaler, model


def _full_proba(model, scaler, x: np.ndarray, classes: list[str]) -> np.ndarray:
    """Probabilities over every class, zero for a class missing from this fold's training part."""
    out = np.zeros((len(x), len(classes)))
    got = model.predict_proba(scaler.transform(x))
    for k, c in enumerate(model.classes_):
        out[:, classes.index(c)] = got[:, k]
    return out


def out_of_fold(data: Labelled, c: float, weight, seed: int) -> np.ndarray:
    """Out-of-fold class probabilities (taxonomy order) of a GroupKFold by question."""
    from sklearn.model_selection import GroupKFold

    classes = list(taxonomy().labels)
    proba = np.zeros((len(data.labels), len(classes)))
    y = np.asarray(data.labels)
    for train, test in GroupKFold(n_splits=FOLDS, shuffle=True, random_state=seed).split(data.x, y, data.groups):
        scaler, model = _fit(data.x[train], list(y[train]), c, weight, seed)
        proba[test] = _full_proba(model, scaler, data.x[test], classes)
    return proba


def decide(proba: np.ndarray, threshold: float) -> list[str]:
    """Labels from probabilities the way the judge decides: the top class, made consistent with P(follow-up) ≥ threshold."""
    classes = list(taxonomy().labels)
    fu = classes.index(taxonomy().followup_label)
    out = []
    for p in proba:
        order = np.argsort(-p)
        label = classes[order[0]]
        if p[fu] >= threshold:
            label = classes[fu]
        elif label == classes[fu]:
            label = classes[order[1]]
        out.append(label)
    return out


def scores(labels: list[str], predicted: list[str]) -> dict:
    """κ (8-way), follow-up F1 / precision / recall, binary κ."""
    fu = taxonomy().followup_label
    ref, got = [x == fu for x in labels], [x == fu for x in predicted]
    tp = sum(a and b for a, b in zip(got, ref))
    return {"kappa": cohen_kappa(labels, predicted), "followup_f1": f1_binary(got, ref),
            "followup_precision": tp / sum(got) if sum(got) else float("nan"),
            "followup_recall": tp / sum(ref) if sum(ref) else float("nan"), "kappa_followup": cohen_kappa(ref, got)}


def best_threshold(labels: list[str], proba: np.ndarray) -> float:
    """The P(follow-up) threshold with the best follow-up F1 on out-of-fold predictions (ties: closest to 0.5)."""
    grid = np.round(np.arange(0.15, 0.86, 0.025), 3)
    fu = taxonomy().followup_label
    ref = [x == fu for x in labels]
    col = list(taxonomy().labels).index(fu)
    best = max(grid, key=lambda t: (round(f1_binary(list(proba[:, col] >= t), ref), 4), -abs(t - 0.5)))
    return float(best)


def calibration_error(p_followup: np.ndarray, truth: list[bool], bins: int = 10) -> float:
    """Expected calibration error of P(follow-up): the mean |observed rate − mean probability| over equal-width bins, weighted by size."""
    truth_ = np.asarray(truth, dtype=float)
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p_followup, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            total += mask.sum() * abs(truth_[mask].mean() - p_followup[mask].mean())
    return float(total / len(p_followup)) if len(p_followup) else float("nan")


def train(path: Path, version: str, embedder: StaticEmbedder, *, seed: int = 0, log=print) -> tuple[LinearModel, dict]:
    """Choose C, weighting and threshold by grouped CV, refit on everything, and return the model and the CV report."""
    data = load_labelled(path, embedder)
    trials = []
    for c in GRID_C:
        for weight in WEIGHTS:
            proba = out_of_fold(data, c, weight, seed)
            t = best_threshold(data.labels, proba)
            s = scores(data.labels, decide(proba, t))
            trials.append({"C": c, "class_weight": weight, "threshold": t, **s})
            log(f"C={c:<5} weight={str(weight):<8} threshold={t:.3f}  κ={s['kappa']:.3f}  follow-up F1={s['followup_f1']:.3f}")
    best = max(trials, key=lambda r: (r["kappa"] + r["followup_f1"]) / 2)
    proba = out_of_fold(data, best["C"], best["class_weight"], seed)
    predicted = decide(proba, best["threshold"])
    per_label = compare(predicted, data.labels, list(taxonomy().labels)).per_label
    scaler, model = _fit(data.x, data.labels, best["C"], best["class_weight"], seed)
    classes = list(taxonomy().labels)
    weights = np.zeros((data.x.shape[1], len(classes)), dtype=np.float32)
    bias = np.full(len(classes), -30.0, dtype=np.float32)
    for k, c in enumerate(model.classes_):
        weights[:, classes.index(c)] = model.coef_[k]
        bias[classes.index(c)] = model.intercept_[k]
    fu = taxonomy().followup_label
    ece = calibration_error(proba[:, list(taxonomy().labels).index(fu)], [r == fu for r in data.labels])
    errors = JudgeErrorRates.from_pairs([p == fu for p in predicted], [r == fu for r in data.labels], f"cv:{path.name}")
    report = {"data": str(path.name), "data_sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16], "turns": len(data.labels),
              "questions": len(set(data.groups)), "seed": seed, "folds": FOLDS, "chosen": best, "trials": trials,
              "cv_per_label": per_label.round(3).to_dict(orient="records"), "cv_error_counts": asdict(errors),
              "cv_calibration_error": round(ece, 4)}
    linear = LinearModel(version, classes, scaler.mean_.astype(np.float32), np.where(scaler.scale_ > 0, scaler.scale_, 1.0).astype(np.float32),
                         weights, bias, best["threshold"], embedder.fingerprint, report)
    return linear, report
