"""A linear projection of the turn's static embedding to a few directions, fitted on the training turns.

Trees over 384 embedding columns split on single coordinates and may overfit a few thousand turns; projected onto
its leading principal directions the embedding keeps what separates turns in a handful of columns (learned-5 uses 8,
chosen by grouped CV on the training turns: κ on later turns rose from 0.51 with the full embedding to about 0.56;
on fresh held-out later turns it was no better than learned-4, which reads the whole embedding).
The projection is fitted with numpy alone (an SVD of the centred training embeddings) and stored in the model's meta,
so judging applies exactly what training fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

META_KEY = "embedding_projection"
"""Where a model's meta keeps its projection; a model without the key reads the full embedding."""


@dataclass(frozen=True)
class Projection:
    """`(embedding − mean) @ components.T`: `mean` (dim,), `components` (k, dim), orthonormal rows."""

    mean: np.ndarray
    components: np.ndarray

    @property
    def size(self) -> int:
        """How many columns the projection gives."""
        return len(self.components)

    def apply(self, embeddings: np.ndarray) -> np.ndarray:
        """The projected columns of (n, dim) embeddings, as float32."""
        return ((np.asarray(embeddings, dtype=np.float64) - self.mean) @ self.components.T).astype(np.float32)

    def to_meta(self) -> dict:
        """The projection as a model's meta keeps it (plain lists, 9 significant digits)."""
        return {"mean": [float(f"{v:.9g}") for v in self.mean], "components": [[float(f"{v:.9g}") for v in row] for row in self.components]}

    @classmethod
    def from_meta(cls, meta: dict) -> "Projection | None":
        """The projection a model's meta names, None when it has none; ValueError when its shapes disagree."""
        blob = meta.get(META_KEY)
        if blob is None:
            return None
        mean, components = np.asarray(blob["mean"], dtype=np.float64), np.asarray(blob["components"], dtype=np.float64)
        if components.ndim != 2 or components.shape[1] != len(mean):
            raise ValueError(f"the model's {META_KEY} has components of shape {components.shape} for a mean of {len(mean)} values")
        return cls(mean, components)


def fit_projection(embeddings: np.ndarray, size: int) -> Projection:
    """The `size` leading principal directions of the embeddings (rows: turns), each signed so its largest loading is positive."""
    x = np.asarray(embeddings, dtype=np.float64)
    mean = x.mean(axis=0)
    _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
    components = vt[:size]
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    return Projection(mean, components * signs[:, None])
