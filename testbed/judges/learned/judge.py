"""The `learned` judge kind: a trained model (linear or boosted trees) behind the common judge interface.

Every verdict carries the 8-way label (the most probable class), the follow-up decision (the
calibrated P(genuine_followup) against the model's threshold), that probability, and a reason
naming the two most probable labels and what the rules said. The identity's version is the
model's version and digest, so each stored label names the exact artefact that made it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from testbed.judges.learned.decision import decide_label
from testbed.judges.learned.embedding import StaticEmbedder, default_embedder
from testbed.judges.learned.features import TURN, featurise
from testbed.judges.learned.model import load_model
from testbed.judges.learned.projection import Projection
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput, Verdict
from testbed.specs.errors import SpecError
from testbed.store.labels import JudgeIdentity

if TYPE_CHECKING:
    from testbed.judges.base import OnVerdict

FOLLOWUP = taxonomy().followup_label
BATCH = 4096
"""Turns featurised together: the embeddings of shared requests and answers are computed once per batch."""


class ModelMismatch(SpecError):
    """The model was trained on other features than this installation makes; the message says what to do."""


class LearnedJudge:
    """A trained judge: synchronous `judge_many` for in-process use, `judge_all` for the judge runner."""

    model = None
    commit_every = 2000

    def __init__(self, name: str, model_path: Path, embedder: StaticEmbedder | None = None):
        self.name = name
        self.path = model_path
        self.trained = load_model(model_path)
        self.embedder = embedder or default_embedder()
        if self.embedder.fingerprint != self.trained.embedding:
            raise ModelMismatch(model_path, "embedding", f"trained with embedding table {self.trained.embedding}, this installation "
                                f"has {self.embedder.fingerprint}", "retrain with scripts/train_judge.py")
        self.version = f"{self.trained.version}+{self.trained.digest}"
        self.features = self.trained.meta.get("features", TURN)
        """The feature set the model was trained on (`testbed.judges.learned.features`)."""
        try:
            self.projection = Projection.from_meta(self.trained.meta)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelMismatch(model_path, "meta.embedding_projection", f"unreadable ({exc})", "retrain with scripts/train_judge.py") from exc
        """The projection of the turn's embedding the model was trained on, None for the whole embedding."""
        self._followup = self.trained.classes.index(FOLLOWUP)

    @property
    def identity(self) -> JudgeIdentity:
        """`name@version+digest` with no model."""
        return JudgeIdentity(self.name, self.version)

    def probabilities(self, items: Sequence[JudgeInput]) -> tuple[np.ndarray, list[str]]:
        """Class probabilities (rows in `items` order, columns in the model's class order) and the rules' labels."""
        features, rules = featurise(items, self.embedder, self.features, self.projection)
        return self.trained.probabilities(features), rules

    def judge_many(self, items: Iterable[JudgeInput]) -> list[Verdict]:
        """Verdicts on many turns, in order."""
        items = list(items)
        out: list[Verdict] = []
        for start in range(0, len(items), BATCH):
            chunk = items[start:start + BATCH]
            probs, rules = self.probabilities(chunk)
            out += [self._verdict(p, rule) for p, rule in zip(probs, rules)]
        return out

    def judge(self, item: JudgeInput) -> Verdict:
        """Verdict on one turn."""
        return self.judge_many([item])[0]

    def _verdict(self, p: np.ndarray, rule: str) -> Verdict:
        order = np.argsort(-p)
        top, second = self.trained.classes[order[0]], self.trained.classes[order[1]]
        p_followup = float(p[self._followup])
        label = decide_label(p, self.trained.classes, self.trained.followup_threshold)
        followup = label == FOLLOWUP
        reason = f"p(followup)={p_followup:.2f}; {top} {p[order[0]]:.2f}, {second} {p[order[1]]:.2f}; rules: {rule}"
        raw = json.dumps({"p_followup": round(p_followup, 4), "threshold": self.trained.followup_threshold,
                          "probabilities": {c: round(float(v), 4) for c, v in zip(self.trained.classes, p)}})
        return Verdict(label=label, followup=followup, reason=reason, raw=raw)

    async def judge_all(self, items: Sequence[JudgeInput], on_verdict: OnVerdict | None = None) -> list[tuple[Verdict, int]]:
        """Verdicts in order, each counted as one call; computed in-process."""
        return reported(self.judge_many(items), on_verdict)


def reported(verdicts: list[Verdict], on_verdict: OnVerdict | None) -> list[tuple[Verdict, int]]:
    """In-process verdicts as the judge interface returns them, each counted as one call and shown to `on_verdict`."""
    if on_verdict is not None:
        for i, verdict in enumerate(verdicts):
            on_verdict(i, verdict, 1)
    return [(v, 1) for v in verdicts]
