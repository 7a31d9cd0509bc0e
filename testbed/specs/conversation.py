"""Specs of multi-turn scenarios: free dialogues and information gathering."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from testbed.specs.agent import Strict
from testbed.specs.scenario import ItemSelection, UserMode, known_dataset


def distinct_temperatures(cls, value: list[float]) -> list[float]:
    """A multi-turn spec's user temperatures: distinct, each in [0, 2]."""
    if any(not 0.0 <= t <= 2.0 for t in value) or len(set(value)) != len(value):
        raise ValueError("temperatures must be distinct values in [0, 2] | fix: list each temperature once, between 0 and 2")
    return value


def distinct_values(cls, value: list[str]) -> list[str]:
    """A list of choices (user modes) given once each."""
    if len(set(value)) != len(value):
        raise ValueError("values repeat | fix: list each value once")
    return value


class ConversationSpec(Strict):
    """What every multi-turn scenario shares: who talks, how long, and how the user stops.

    `max_user_turns` counts every user turn, the opening one included. The user stops by writing
    `end_marker`; the orchestrator turns it into a stop event and strips it from the stored text,
    so no protocol string ever lives inside a message. `token_budget` caps the completion tokens
    of a whole episode.
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    assistant: str
    user: str
    user_modes: list[UserMode] = Field(default_factory=lambda: ["instructed"], min_length=1)
    user_prompt_file: Path | None = None
    temperatures: list[float] = Field(default_factory=lambda: [0.7], min_length=1)
    samples_per_temperature: int = Field(1, ge=1, le=1000)
    max_tokens: int = Field(128, ge=1, le=32768)
    max_user_turns: int = Field(4, ge=1, le=100)
    end_marker: str = Field("[[END]]", min_length=3)
    token_budget: int = Field(4096, ge=16)
    seed: int = 0

    _temperatures = field_validator("temperatures")(distinct_temperatures)
    _modes = field_validator("user_modes")(distinct_values)


class DialogueScenarioSpec(ConversationSpec):
    """A free dialogue: the opening user turn is a dataset item or a persona's opening line.

    With `opening: dataset` every item is played by `default_persona`; with `opening: persona`
    every persona in `personas_file` (YAML: `personas: [{id, name, persona, goal, opening}]`) is.
    """

    kind: Literal["dialogue"]
    opening: Literal["dataset", "persona"] = "dataset"
    dataset: str | None = None
    items: ItemSelection = ItemSelection()
    personas_file: Path | None = None
    default_persona: str = "a person who asked the assistant the question above and wants to understand the answer"
    default_goal: str = "get a complete, correct answer and understand it; ask about anything unclear or wrong"

    @model_validator(mode="after")
    def _opening(self) -> "DialogueScenarioSpec":
        if self.opening == "dataset":
            if self.dataset is None:
                raise ValueError("@dataset opening `dataset` needs a dataset | fix: add dataset: gsm8k (or opening: persona)")
            try:
                known_dataset(self.dataset)
            except ValueError as exc:
                raise ValueError(f"@dataset {exc}") from None
        elif self.personas_file is None:
            raise ValueError("@personas_file opening `persona` needs a personas file | fix: add personas_file: personas/NAME.yaml")
        return self


class InfoGatheringScenarioSpec(ConversationSpec):
    """Information gathering: the assistant sees a masked request; the user holds the hidden facts.

    The user may reveal a fact only after the assistant asked about it, and the orchestrator
    enforces that: the user's prompt holds the statements of asked facts only. The episode ends
    when the assistant answers without asking anything (its final output), or at the limits.
    """

    kind: Literal["info_gathering"]
    tasks_file: Path | None = None
    tasks: ItemSelection = ItemSelection()
    domains: list[str] | None = None

    @field_validator("user_modes")
    @classmethod
    def _instructed_only(cls, value: list[str]) -> list[str]:
        if value != ["instructed"]:
            raise ValueError("information gathering needs user_modes: [instructed] | fix: the hidden facts reach the user through its prompt")
        return value


class PersonaSpec(Strict):
    """One simulated user for persona dialogues."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    name: str
    persona: str
    goal: str
    opening: str = Field(min_length=1)


class PersonaSet(Strict):
    """A personas file."""

    personas: list[PersonaSpec] = Field(min_length=1)

    @field_validator("personas")
    @classmethod
    def _unique(cls, value: list[PersonaSpec]) -> list[PersonaSpec]:
        ids = [p.id for p in value]
        if len(set(ids)) != len(ids):
            raise ValueError("persona ids repeat | fix: give every persona its own id")
        return value
