"""The label taxonomy, read from `judges/labels.yaml` so that prompts, classifier and report agree."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import yaml

from testbed.specs.loader import builtin_dir


@dataclass(frozen=True)
class Taxonomy:
    """The eight labels in their canonical order, their definitions, and which count as what."""

    version: int
    labels: tuple[str, ...]
    definitions: dict[str, str]
    followup_label: str
    drift_labels: frozenset[str]

    def is_followup(self, label: str) -> bool:
        """True for the one label that counts as a genuine follow-up."""
        return label == self.followup_label

    def check(self, label: str) -> str:
        """The label itself, or ValueError naming the known labels."""
        if label not in self.definitions:
            raise ValueError(f"unknown label {label!r}; known: {', '.join(self.labels)}")
        return label


@lru_cache(maxsize=1)
def taxonomy() -> Taxonomy:
    """The built-in taxonomy (cached)."""
    data = yaml.safe_load((builtin_dir("judges") / "labels.yaml").read_text())
    labels = tuple(entry["name"] for entry in data["labels"])
    return Taxonomy(
        version=int(data["version"]),
        labels=labels,
        definitions={e["name"]: " ".join(e["definition"].split()) for e in data["labels"]},
        followup_label=data["followup_label"],
        drift_labels=frozenset(data["drift_labels"]),
    )


LABELS: tuple[str, ...] = (
    "genuine_followup", "restate_question", "echo_assistant", "meta_planning",
    "degenerate", "new_question", "short_filler", "other",
)
"""The label names, for code that needs them without reading the YAML (kept equal by a test)."""
