"""The learned judge's linear model (standardised features, a multinomial linear layer, a follow-up threshold), and `load_model`.

Stored as one small JSON file (weights rounded to 6 significant digits) with its version, what
it was trained on, its cross-validated figures and the embedding it expects, so a label says
exactly which model made it. Prediction is numpy only: a matrix product and a softmax.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from testbed.judges.learned.saved import SavedModel
from testbed.specs.errors import SpecError

if TYPE_CHECKING:
    from testbed.judges.learned.trees import BoostedTrees


@dataclass
class LinearModel(SavedModel):
    """A trained judge: per-class weights over standardised features, and the follow-up threshold."""

    version: str
    classes: list[str]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    """(features, classes)."""
    bias: np.ndarray
    followup_threshold: float
    """P(genuine_followup) at or above which the follow-up verdict is yes (chosen for follow-up F1 in CV)."""
    embedding: str
    """Fingerprint of the embedding table the features were made with."""
    meta: dict = field(default_factory=dict)
    """How it was trained: data file and hash, seed, C, CV figures."""

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities, one row per turn."""
        logits = ((features - self.mean) / self.scale) @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    def to_json(self) -> str:
        """The model as JSON (what `save` writes)."""
        blob = {"version": self.version, "classes": self.classes, "followup_threshold": self.followup_threshold,
                "embedding": self.embedding, "meta": self.meta,
                "mean": _rounded(self.mean), "scale": _rounded(self.scale), "weights": _rounded(self.weights), "bias": _rounded(self.bias)}
        return json.dumps(blob, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_blob(cls, blob: dict) -> "LinearModel":
        """The model from the dict `to_json` wrote."""
        arrays = {k: np.asarray(blob[k], dtype=np.float32) for k in ("mean", "scale", "weights", "bias")}
        if arrays["weights"].shape != (len(arrays["mean"]), len(blob["classes"])) or arrays["scale"].shape != arrays["mean"].shape:
            raise ValueError("the weight, mean and scale arrays do not fit together")
        return cls(blob["version"], blob["classes"], followup_threshold=float(blob["followup_threshold"]),
                   embedding=blob["embedding"], meta=blob.get("meta", {}), **arrays)


def _rounded(a: np.ndarray) -> list:
    return np.vectorize(lambda x: float(f"{x:.6g}"))(a).tolist() if a.size else a.tolist()


class BadModelFile(SpecError):
    """A model file that is not JSON or lacks what its kind needs; the message names the file and the fix."""


def load_model(path: Path) -> "LinearModel | BoostedTrees":
    """The model in a file written by either model's `save`: boosted trees when it says so, else linear (learned-1's format)."""
    from testbed.judges.learned.trees import KIND, BoostedTrees

    fix = "retrain it with scripts/train_judge.py, or restore the file from git"
    try:
        blob = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadModelFile(path, "(file)", f"cannot be read as a model: {exc}", fix) from None
    if not isinstance(blob, dict):
        raise BadModelFile(path, "(top level)", "is not a JSON object", fix)
    try:
        return BoostedTrees.from_blob(blob) if blob.get("kind") == KIND else LinearModel.from_blob(blob)
    except KeyError as exc:
        raise BadModelFile(path, str(exc.args[0]), "missing", fix) from None
    except (TypeError, ValueError) as exc:
        raise BadModelFile(path, str(blob.get("kind", "linear")), f"malformed model: {exc}", fix) from None
