"""Scenario specs: what to run. A scenario expands deterministically into episodes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from testbed.datasets.catalog import DATASETS
from testbed.datasets.contexts import ContextSelection
from testbed.specs.agent import Strict
from testbed.specs.perturbation import PerturbationEntry, PerturbationName, PerturbationSpec, perturbation_specs

UserMode = Literal["raw", "instructed"]
Perturbation = PerturbationName
KNOWN_DATASETS = DATASETS.names()
"""The dataset names registered when specs were imported; validation reads the registry itself, so a later entry counts."""


def known_dataset(value: str) -> str:
    """The dataset name when a dataset entry is registered under it; ValueError naming the known ones otherwise."""
    if value not in DATASETS:
        raise ValueError(f"unknown dataset {value!r} | fix: use one of {', '.join(DATASETS.names())}")
    return value


class ItemSelection(Strict):
    """Which dataset items to use: the first `limit` in file order, or a seeded sample."""

    limit: int | None = Field(None, ge=1)
    seed: int | None = None
    contexts: ContextSelection | None = None
    """For a dataset of real conversations (sharegpt): depth, language and length caps of its contexts."""
    LEFT_OUT_AT_DEFAULT = ("contexts",)


class ProbeScenarioSpec(Strict):
    """The interaction-awareness probe: a question, one assistant answer, then user-turn variants.

    The assistant answer is generated once per item and shared by every variant (user mode ×
    temperature × sample × perturbation), so variants differ only in how the user turn was made.
    `assistant` and `user` name agent specs: a path relative to this file, or a built-in name.
    """

    kind: Literal["probe"]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    dataset: str
    items: ItemSelection = ItemSelection()
    assistant: str
    user: str
    user_modes: list[UserMode] = Field(default_factory=lambda: ["raw", "instructed"], min_length=1)
    user_prompt_file: Path | None = None
    temperatures: list[float] = Field(default_factory=lambda: [0.0], min_length=1)
    samples_per_temperature: int = Field(1, ge=1, le=1000)
    perturbations: list[PerturbationEntry] = Field(default_factory=lambda: [PerturbationSpec(kind="none")], min_length=1)
    """Names, or mappings with parameters (testbed.specs.perturbation); each label once."""
    max_tokens: int = Field(128, ge=1, le=32768)
    seed: int = 0
    regenerate_answer: bool = False
    """On real contexts (sharegpt): the assistant writes its own answer instead of showing the real one; the
    real next turn then answered another message, so it is stored as a weaker reference."""
    LEFT_OUT_AT_DEFAULT = ("regenerate_answer",)

    @field_validator("temperatures")
    @classmethod
    def _temperatures(cls, value: list[float]) -> list[float]:
        bad = [t for t in value if not 0.0 <= t <= 2.0]
        if bad:
            raise ValueError(f"temperatures {bad} outside [0, 2] | fix: use values between 0 and 2")
        if len(set(value)) != len(value):
            raise ValueError("temperatures repeat | fix: list each temperature once; use samples_per_temperature")
        return value

    @field_validator("user_modes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("values repeat | fix: list each value once")
        return value

    @field_validator("perturbations")
    @classmethod
    def _distinct_labels(cls, value: list[PerturbationEntry]) -> list[PerturbationEntry]:
        perturbation_specs(value)
        return value

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, value: str) -> str:
        return known_dataset(value)

