"""The spec of τ²-bench task scenarios: a domain's tasks run by a tool-using assistant and a goal-driven simulated user."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from testbed.specs.agent import Strict
from testbed.specs.conversation import distinct_temperatures, distinct_values

TAU2_DOMAINS = ("airline", "retail", "telecom", "mock")
"""The domains a spec may name (testbed.scenarios.tau2.domains.DOMAINS checks against the installed package)."""
Tau2UserMode = Literal["instructed", "raw", "transcript", "oneshot"]
"""How the simulated user's model is asked for its turn (testbed.scenarios.tau2.user_framings): τ²'s role-flipped chat
(`instructed`), the true-role chat with the user turn continued (`raw`), the conversation as a transcript whose
customer line the model continues (`transcript`), or τ²'s chat with one example customer turn (`oneshot`)."""
TOOLLESS_USER_MODES = ("raw", "transcript")
"""The user modes whose user writes text only, never a tool call: telecom's user must call its phone's tools."""
VarySeeds = Literal["both", "user", "assistant"]
"""Whose sampling seed changes from one trial of a task to the next: both sides' (`both`), only the simulated user's
(`user`: the assistant's seed is the same in every trial of a task) or only the assistant's (`assistant`)."""
VARY_SEEDS_KEY = "vary_seeds"
"""The key of a generated message's sampling metadata that records its episode's `vary_seeds` when it is not `both`
(absent: `both`, as in every episode stored before the field existed)."""

DATASET_PREFIX = "tau2-"
"""What a τ² episode's dataset name starts with; `dataset_name` and `domain_of` are its only readers."""


def dataset_name(domain: str) -> str:
    """The dataset a τ² domain's episodes are stored under (`tau2-airline`)."""
    return f"{DATASET_PREFIX}{domain}"


def domain_of(dataset: str) -> str | None:
    """The τ² domain a stored episode's dataset names (`tau2-airline` → `airline`), None for a dataset of no τ² domain."""
    name = dataset.removeprefix(DATASET_PREFIX)
    return name if dataset.startswith(DATASET_PREFIX) and name in TAU2_DOMAINS else None


class TaskSelection(Strict):
    """Which τ² tasks run: named ids, or a τ² split (its `base` split by default where the domain has splits),
    then the first `limit` of them in the package's order, or a sample drawn with `seed`."""

    ids: list[str] | None = Field(None, min_length=1)
    split: str | None = None
    limit: int | None = Field(None, ge=1)
    seed: int | None = None


class Tau2ScenarioSpec(Strict):
    """τ²-bench tasks with outcomes.

    Every task runs `trials` times under every user mode × user temperature × `vary_seeds`; each episode gets a
    fresh environment with the task's initial state. The assistant's system prompt is τ²'s agent
    instructions with the domain policy, its tools the domain's; the simulated user's prompt is
    `user_prompt_file` with τ²'s simulation guidelines in `{guidelines}` and the task's user
    scenario in `{scenario}`. An episode ends on a stop signal (the user's `###STOP###`,
    `###TRANSFER###`, `###OUT-OF-SCOPE###`; the assistant's `###STOP###`), after `max_steps`
    steps or `max_errors` failed tool calls, and is scored by τ²'s evaluator.
    """

    LEFT_OUT_AT_DEFAULT = ("vary_seeds",)

    kind: Literal["tau2"]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    domain: str
    tasks: TaskSelection = TaskSelection()
    trials: int = Field(1, ge=1, le=100)
    assistant: str
    user: str
    user_modes: list[Tau2UserMode] = Field(default_factory=lambda: ["instructed"], min_length=1)
    """The user framings to run, one grid condition each (Tau2UserMode). τ²'s own `instructed` is the default and
    what τ²'s orchestrator (the `tau2` framework) uses; under it Qwen2.5-Coder 0.5B/1.5B users spoke as the agent in
    about 4 of 5 turns on the mock tasks, under `transcript` in none (benchmarks/tau2_user_framings.py)."""
    user_prompt_file: Path = Path("prompts/user-tau2.md")
    temperatures: list[float] = Field(default_factory=lambda: [0.0], min_length=1)
    max_tokens: int = Field(256, ge=1, le=32768)
    """Completion tokens per turn, assistant's and user's alike."""
    max_steps: int = Field(100, ge=2, le=1000)
    """Steps an episode may take after its opening, as τ² counts them: one per generated message, one per batch of tool
    results (τ²'s max_steps; its default is 200)."""
    max_errors: int = Field(10, ge=1, le=1000)
    """Failed tool calls an episode may make before it ends (τ²'s max_errors)."""
    seed: int = 0
    vary_seeds: list[VarySeeds] = Field(default_factory=lambda: ["both"], min_length=1)
    """Whose seed varies across trials, one grid condition per value (VarySeeds): `[user, assistant]` with
    `trials: 5` runs every task five times with the assistant's seed fixed and five times with the user's fixed, so
    the tau2 report can tell how much of the spread over trials each side makes. At temperature 0 on a
    deterministic server seeds change nothing and both spreads are 0. An agent whose spec fixes `sampling.seed`
    keeps it: under `both` and `user` that is the assistant's seed in every trial; `assistant` refuses it."""

    @property
    def dataset(self) -> str:
        """The dataset name its episodes are stored under (`tau2-<domain>`), the field a probe or dialogue names."""
        return dataset_name(self.domain)


    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        if value not in TAU2_DOMAINS:
            raise ValueError(f"unknown τ² domain {value!r} | fix: use one of {', '.join(TAU2_DOMAINS)}")
        return value

    _temperatures = field_validator("temperatures")(distinct_temperatures)
    _modes = field_validator("user_modes")(distinct_values)

    @field_validator("user_modes")
    @classmethod
    def _user_tools(cls, value: list[str], info: ValidationInfo) -> list[str]:
        toolless = [m for m in value if m in TOOLLESS_USER_MODES]
        if toolless and info.data.get("domain") == "telecom":
            raise ValueError(f"a {toolless[0]} user cannot call tools, and telecom's user must (its phone) "
                             "| fix: use user_modes: [instructed] or [oneshot] for telecom")
        return value
    _vary = field_validator("vary_seeds")(distinct_values)
