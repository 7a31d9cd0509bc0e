"""What every scenario kind provides: a deterministic plan of episodes and a runner for one unit.

A *unit* is what variants share (a dataset item, a persona, a task); each variant is one episode
with a stable id. The generic runner (testbed.running.runner) handles the store, resuming and progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from testbed.backends.base import Backend
from testbed.control_tokens import ControlTokens
from testbed.specs.errors import SpecError
from testbed.specs.loader import ResolvedAgent, ResolvedScenario
from testbed.specs.registries import default_framework
from testbed.store import EpisodeKey, EpisodeOutcome, SharedAnswer

Sink = Callable[[EpisodeOutcome], Awaitable[None] | None]


def stable_hash(*parts: object, length: int = 16) -> str:
    """A short hex digest of JSON-encoded parts: the same inputs give the same id everywhere."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:length]


def hashed_share(key: str) -> float:
    """Where `key` falls in [0, 1), by a fixed hash (the first 8 hex digits of its SHA-256, modulo 1000): a split made by
    comparing it with a share depends on the key alone, never on a label."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 1000 / 1000


@dataclass(frozen=True, slots=True)
class EpisodeVariant:
    """One episode to run: its key (id and conditions) and the sampling seed derived from the id."""

    key: EpisodeKey
    seed: int


def variant(key_parts: tuple, make_key: Callable[[str], EpisodeKey]) -> EpisodeVariant:
    """An episode variant whose id hashes `key_parts` (everything that shapes the episode)."""
    eid = stable_hash(*key_parts)
    return EpisodeVariant(make_key(eid), int(eid[:8], 16))


@dataclass(frozen=True)
class RunContext:
    """What a unit runner may use: backends by role, shared generations, and where outcomes go.

    `slots` bounds the episodes in flight across the whole run (a shared generation takes one
    too): the spec's concurrency counts episodes, not dataset items, so an interrupted run loses
    at most that many.
    """

    scenario: ResolvedScenario
    backends: dict[str, Backend]
    shared: dict[str, dict]
    save_shared: Callable[[SharedAnswer], None]
    sink: Sink
    slots: asyncio.Semaphore | None = field(default=None, compare=False)
    framework: str = field(default_factory=default_framework)
    """Who runs the turn loops (testbed.frameworks); the baseline unless told otherwise."""
    wire: Any = field(default=None, compare=False)
    """The wire recorder (testbed.wire.WireRecorder) every episode's requests go through (every framework's, and
    the native loop's when it keeps a wire log), or None."""
    keep_wire: bool = True
    """Whether the requests the recorder saw are stored with each episode (the wire log)."""
    _tokens: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)

    def tokens(self, agent: ResolvedAgent) -> ControlTokens:
        """The control tokens of one of the run's agents, looked up once per run rather than once per episode
        (servers have started and models are on disk by the time episodes run, so the answer cannot change)."""
        cached = self._tokens.get(id(agent))
        if cached is None:
            cached = self._tokens[id(agent)] = (agent, ControlTokens.for_agent(agent.spec))
        return cached[1]

    def slot(self) -> contextlib.AbstractAsyncContextManager:
        """Hold one of the run's episode slots while generating (no limit when the run set none)."""
        return self.slots if self.slots is not None else contextlib.nullcontext()


class UnitRunner(Protocol):
    """Runs the pending variants of one unit, handing every finished episode to the sink."""

    async def run(self, unit: Any, variants: list[EpisodeVariant]) -> None:
        """Run the variants; errors become outcomes with reasons, never exceptions."""


class ScenarioKind(Protocol):
    """A scenario kind: how a spec expands into units and variants, and how a unit runs."""

    def plan(self, scenario: ResolvedScenario) -> list[tuple[Any, list[EpisodeVariant]]]:
        """Every unit with its variants, in a fixed order."""

    def runner(self, context: RunContext) -> UnitRunner:
        """A runner for this kind's units."""


async def emit(sink: Sink, outcome: EpisodeOutcome) -> None:
    """Hand a finished episode to the sink, awaiting it when it is a coroutine."""
    result = sink(outcome)
    if result is not None:
        await result


def load_dataset_items(scenario: ResolvedScenario, dataset: str, selection) -> list:
    """Dataset items for a scenario, a bad dataset reported against the spec file."""
    from testbed.datasets import load_items

    try:
        return load_items(dataset, limit=selection.limit, seed=selection.seed, contexts=selection.contexts)
    except ValueError as exc:
        field, fix = (("items.contexts", "drop `contexts:` or use a dataset of real conversations (sharegpt)")
                      if selection.contexts is not None else ("dataset", "use a known dataset name"))
        raise SpecError(scenario.path, field, str(exc), fix) from None
