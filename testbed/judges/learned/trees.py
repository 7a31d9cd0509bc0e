"""The learned judge's boosted-tree model: gradient-boosted trees over the same features, numpy-only at judging time.

Trained with scikit-learn's HistGradientBoostingClassifier and stored as one JSON file: every
tree's nodes (feature, threshold, children, leaf value) flattened into a few arrays, plus the
baseline scores, the version, the follow-up threshold, the embedding fingerprint and the CV
report. Prediction walks all trees at once over a batch (one gather per depth level), adds the
leaf values per class, and takes a softmax, so judging needs neither scikit-learn nor pickle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from testbed.judges.learned.saved import SavedModel

KIND = "boosted_trees"
ROWS = 256
"""Turns walked together: a (rows × trees) node matrix of 256 rows is about 3 MB for learned-2."""


@dataclass
class BoostedTrees(SavedModel):
    """A trained judge of boosted trees; `probabilities` gives class probabilities per turn."""

    version: str
    classes: list[str]
    baseline: np.ndarray
    """(classes,) raw score every turn starts from."""
    tree_class: np.ndarray
    """(trees,) the class each tree adds to."""
    roots: np.ndarray
    """(trees,) index of each tree's root in the node arrays."""
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    missing_left: np.ndarray
    """Node arrays (global indices); a leaf has left == right == its own index."""
    followup_threshold: float
    embedding: str
    meta: dict = field(default_factory=dict)
    depth: int = 0
    """The deepest path: how many steps a walk takes."""

    def __post_init__(self) -> None:
        self._per_class = np.zeros((len(self.tree_class), len(self.classes)))
        self._per_class[np.arange(len(self.tree_class)), self.tree_class] = 1.0

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities, one row per turn, walked `ROWS` rows at a time so memory stays small."""
        x = np.asarray(features, dtype=np.float32)
        if len(x) <= ROWS:
            return self._probabilities(x)
        return np.concatenate([self._probabilities(x[k:k + ROWS]) for k in range(0, len(x), ROWS)])

    def _probabilities(self, features: np.ndarray) -> np.ndarray:
        x = features.astype(np.float64)
        flat = x.ravel()
        base = (np.arange(len(x)) * x.shape[1])[:, None]
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        for _ in range(self.depth):
            values = flat[base + self.feature[node]]
            go_left = np.where(np.isnan(values), self.missing_left[node], values <= self.threshold[node])
            node = np.where(go_left, self.left[node], self.right[node])
        scores = self.baseline + self.value[node] @ self._per_class
        scores -= scores.max(axis=1, keepdims=True)
        e = np.exp(scores)
        return e / e.sum(axis=1, keepdims=True)

    @classmethod
    def from_sklearn(cls, model, classes: list[str], version: str, followup_threshold: float, embedding: str,
                     meta: dict) -> "BoostedTrees":
        """Flatten a fitted HistGradientBoostingClassifier; `classes` is the order the judge reports (taxonomy order)."""
        fitted = list(model.classes_)
        if len(fitted) < 3:
            raise ValueError("boosted trees need at least three classes in the training labels")
        baseline = np.full(len(classes), -30.0)
        baseline[[classes.index(c) for c in fitted]] = np.asarray(model._baseline_prediction).ravel()
        arrays: dict[str, list] = {k: [] for k in ("feature", "threshold", "left", "right", "value", "missing_left")}
        roots, tree_class, depth, offset = [], [], 0, 0
        for iteration in model._predictors:
            for k, predictor in enumerate(iteration):
                nodes = predictor.nodes
                index = np.arange(len(nodes)) + offset
                leaf = nodes["is_leaf"].astype(bool)
                arrays["feature"].append(np.where(leaf, 0, nodes["feature_idx"]))
                arrays["threshold"].append(np.where(leaf, 0.0, _float32_floor(nodes["num_threshold"])))
                arrays["left"].append(np.where(leaf, index, nodes["left"].astype(np.int64) + offset))
                arrays["right"].append(np.where(leaf, index, nodes["right"].astype(np.int64) + offset))
                arrays["value"].append(np.where(leaf, nodes["value"], 0.0))
                arrays["missing_left"].append(nodes["missing_go_to_left"].astype(bool))
                roots.append(offset)
                tree_class.append(classes.index(fitted[k]))
                depth = max(depth, int(nodes["depth"].max()))
                offset += len(nodes)
        flat = {k: np.concatenate(v) for k, v in arrays.items()}
        return cls(version, classes, baseline, np.asarray(tree_class), np.asarray(roots), flat["feature"].astype(np.int64),
                   flat["threshold"], flat["left"].astype(np.int64), flat["right"].astype(np.int64), flat["value"],
                   flat["missing_left"], followup_threshold, embedding, meta, depth)

    def to_json(self) -> str:
        """The model as JSON (what `save` writes)."""
        blob = {"kind": KIND, "version": self.version, "classes": self.classes, "followup_threshold": self.followup_threshold,
                "embedding": self.embedding, "meta": self.meta, "depth": self.depth, "baseline": _rounded(self.baseline),
                "tree_class": self.tree_class.tolist(), "roots": self.roots.tolist(), "feature": self.feature.tolist(),
                "threshold": _rounded(self.threshold), "left": self.left.tolist(), "right": self.right.tolist(),
                "value": _rounded(self.value), "missing_left": self.missing_left.astype(int).tolist()}
        return json.dumps(blob, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_blob(cls, blob: dict) -> "BoostedTrees":
        """The model from the dict `to_json` wrote."""
        ints = {k: np.asarray(blob[k], dtype=np.int64) for k in ("tree_class", "roots", "feature", "left", "right")}
        nodes = len(ints["feature"])
        if not all(len(blob[k]) == nodes for k in ("threshold", "left", "right", "value", "missing_left")) or \
                len(ints["roots"]) != len(ints["tree_class"]) or len(blob["baseline"]) != len(blob["classes"]):
            raise ValueError("the node arrays do not have one entry per node, or the trees and classes do not match")
        if nodes and (max(ints["left"].max(), ints["right"].max(), ints["roots"].max()) >= nodes or ints["tree_class"].max() >= len(blob["classes"])):
            raise ValueError("a node, root or class index points past its array")
        return cls(blob["version"], blob["classes"], np.asarray(blob["baseline"], dtype=np.float64), ints["tree_class"], ints["roots"],
                   ints["feature"], np.asarray(blob["threshold"], dtype=np.float32).astype(np.float64), ints["left"], ints["right"],
                   np.asarray(blob["value"], dtype=np.float64), np.asarray(blob["missing_left"], dtype=bool),
                   float(blob["followup_threshold"]), blob["embedding"], blob.get("meta", {}), int(blob["depth"]))


def _float32_floor(t: np.ndarray) -> np.ndarray:
    """The largest float32 at or below each threshold: for float32 features `x <= t` decides the same, and 9 digits store it exactly."""
    t32 = t.astype(np.float32)
    return np.where(t32.astype(np.float64) > t, np.nextafter(t32, np.float32(-np.inf)), t32).astype(np.float64)


def _rounded(a: np.ndarray) -> list:
    return [float(f"{x:.9g}") for x in np.asarray(a, dtype=np.float64).ravel()]
