"""The spec of τ²-bench task scenarios: a domain's tasks run by a tool-using assistant and a goal-driven simulated user."""

from __future__ import annotations

from dataclasses import dataclass
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

USER_FAULTS = ("premature_stop", "revealed_early", "invented_fact", "ungrounded_device_claim", "answers_as_agent",
               "contradiction", "ignores_instruction", "near_revealed_after_ask", "near_agent_said_first",
               "near_device_after_check", "near_stop_after_done", "near_stop_after_transfer", "near_stop_after_refusal")
"""The faults and near misses a `user_faults` plan may plant (testbed.scenarios.tau2.fault_injection says what each is)."""
FAULT_PERTURBATION = "user-fault:"
"""What an episode's `perturbation` starts with when a fault or near miss was planned for it."""


@dataclass(frozen=True)
class FaultPlan:
    """One planted turn: which fault or near miss (`USER_FAULTS`) at which user turn (1-based, the user's spoken turns)."""

    kind: str
    turn: int

    @property
    def label(self) -> str:
        """The plan as written in a spec (`invented_fact@2`)."""
        return f"{self.kind}@{self.turn}"

    @property
    def perturbation(self) -> str:
        """The episode condition that carries the plan (`user-fault:invented_fact@2`)."""
        return FAULT_PERTURBATION + self.label


def parse_plan(text: str) -> FaultPlan | None:
    """A plan from its spec text (`KIND@TURN`), None for `none`; a ValueError saying what is wrong and how to fix it."""
    if text == "none":
        return None
    kind, at, turn = text.partition("@")
    fix = f"write none or KIND@TURN (TURN a user turn from 1), KIND one of {', '.join(USER_FAULTS)}"
    if kind not in USER_FAULTS:
        raise ValueError(f"unknown user fault {kind!r} in {text!r} | fix: {fix}")
    if not at or not turn.isdigit() or int(turn) < 1:
        raise ValueError(f"user fault {text!r} names no user turn | fix: {fix} (e.g. {kind}@2)")
    return FaultPlan(kind, int(turn))


def plan_of(perturbation: str | None) -> FaultPlan | None:
    """The plan an episode's `perturbation` carries, None for a clean one (or a perturbation of another kind)."""
    if not perturbation or not perturbation.startswith(FAULT_PERTURBATION):
        return None
    return parse_plan(perturbation.removeprefix(FAULT_PERTURBATION))


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

    LEFT_OUT_AT_DEFAULT = ("vary_seeds", "user_faults")

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
    user_faults: list[str] = Field(default_factory=lambda: ["none"], min_length=1)
    """Faults to plant in the simulated user's turns, one grid condition each: `none` (the user as it is) or
    `KIND@TURN`, a fault or near miss of the fault-injection lab planted at the user's TURN-th spoken turn
    (testbed.scenarios.tau2.fault_injection: `invented_fact@2`, `premature_stop@3`, `near_stop_after_done@5` ...).
    The plan is the episode's `perturbation` condition (`user-fault:invented_fact@2`), the planted message records it
    in its sampling; only the native framework asks the user for its turns, so only there are plans carried out."""

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
    _faults = field_validator("user_faults")(distinct_values)

    @field_validator("user_faults")
    @classmethod
    def _planned_faults(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_plan(text)
        return value
