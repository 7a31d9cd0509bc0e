"""Runs a scenario into the store: plans episodes, skips finished ones, shows progress, cleans up.

The order of checks is deliberate: the spec, the dataset and the backends' capabilities are
checked before any server starts, and servers are checked before any episode runs, so bad input
fails in seconds and a resumed run never loses or repeats a finished episode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from testbed.backends.base import Backend, BackendError
from testbed.backends.factory import BackendPool, capabilities_of, managed_model_problem
from testbed.progress import EpisodeProgress
from testbed.provenance import git_revision, package_versions
from testbed.scenarios.base import EpisodeVariant, RunContext, ScenarioKind
from testbed.specs.errors import SpecError
from testbed.specs.loader import ResolvedScenario
from testbed.store import EpisodeOutcome, Store


@dataclass(frozen=True)
class RunSummary:
    """How a run ended: counts over the whole run, not just this invocation."""

    run_id: str
    planned: int
    skipped: int
    done: int
    errors: int
    status: str


def default_run_id(scenario: ResolvedScenario) -> str:
    """The same spec gives the same run id, so running it again resumes it."""
    return f"{scenario.spec.name}-{scenario.fingerprint()}"


def preflight(scenario: ResolvedScenario) -> None:
    """Refuse what cannot work, before anything starts: a user mode the backend cannot do, an unknown model."""
    for agent in (scenario.assistant, scenario.user):
        problem = managed_model_problem(agent.spec)
        if problem:
            raise SpecError(agent.path, "model", problem, "use `embedded`, a folder with the model, or download it first")
    if "raw" in scenario.spec.user_modes and not capabilities_of(scenario.user.spec).continue_user_turn:
        raise SpecError(
            scenario.path, "user_modes",
            f"user mode `raw` needs a backend that continues the user turn; agent {scenario.user.spec.name} "
            f"({scenario.user.path}) uses backend `{scenario.user.spec.backend}` without that capability",
            "use a vLLM agent for the user, or user_modes: [instructed]",
        )


def scenario_kind(scenario: ResolvedScenario) -> ScenarioKind:
    """The kind module that plans and runs this scenario (imported when needed)."""
    kind = scenario.spec.kind
    if kind == "probe":
        from testbed.scenarios.probe import ProbeKind

        return ProbeKind()
    if kind == "dialogue":
        from testbed.scenarios.dialogue import DialogueKind

        return DialogueKind()
    from testbed.scenarios.info_gathering import InfoGatheringKind

    return InfoGatheringKind()


def plan(scenario: ResolvedScenario) -> list[tuple[Any, list[EpisodeVariant]]]:
    """Every unit of the scenario with its episode variants."""
    return scenario_kind(scenario).plan(scenario)


async def run_scenario(
    scenario: ResolvedScenario,
    store: Store,
    *,
    run_id: str | None = None,
    console: Console | None = None,
    show_progress: bool = True,
    backends: Mapping[str, Backend] | None = None,
) -> RunSummary:
    """Run (or resume) a probe scenario; every finished episode is committed as it finishes.

    `backends` (by role: `assistant`, `user`) replaces the backends the agent specs describe;
    tests pass scripted ones here.
    """
    preflight(scenario)
    planned = plan(scenario)
    run_id = run_id or default_run_id(scenario)
    total = sum(len(v) for _, v in planned)
    store.begin_run(run_id, scenario=scenario.spec.name, kind=scenario.spec.kind, spec=scenario.as_dict(),
                    fingerprint=scenario.fingerprint(), versions=package_versions(), git_revision=git_revision(), planned=total)
    done = store.done_episode_ids(run_id)
    pending = [(item, [v for v in variants if v.key.episode_id not in done]) for item, variants in planned]
    pending = [(item, vs) for item, vs in pending if vs]
    todo = sum(len(vs) for _, vs in pending)
    status = "interrupted"
    try:
        if todo:
            async with BackendPool() as pool:
                chosen = dict(backends) if backends else await _backends_from_specs(scenario, pool)
                await _execute(scenario, store, run_id, pending, todo, chosen, console, show_progress)
        counts = _counts(store, run_id)
        status = "done" if counts["done"] == total else "incomplete"
        return RunSummary(run_id, total, total - todo, counts["done"], counts["error"], status)
    except BackendError:
        status = "failed"
        raise
    finally:
        store.finish_run(run_id, status)


async def _backends_from_specs(scenario: ResolvedScenario, pool: BackendPool) -> dict[str, Backend]:
    """One backend per distinct agent spec; the same spec in both roles shares one backend."""
    by_spec: dict[str, Backend] = {}
    chosen = {}
    for role, agent in (("assistant", scenario.assistant), ("user", scenario.user)):
        ident = agent.spec.model_dump_json()
        if ident not in by_spec:
            by_spec[ident] = await pool.backend_for(agent.spec)
        chosen[role] = by_spec[ident]
    return chosen


async def _execute(scenario, store, run_id, pending, todo, backends, console, show_progress) -> None:
    with EpisodeProgress(scenario.spec.name, todo, console=console, enabled=show_progress) as progress:

        def sink(outcome: EpisodeOutcome) -> None:
            store.write_episode(run_id, outcome)
            progress.advance(error=outcome.status != "done", tokens=outcome.usage.completion_tokens)

        context = RunContext(scenario, backends, store.shared_answers(run_id), lambda a: store.write_shared_answer(run_id, a), sink)
        runner = scenario_kind(scenario).runner(context)
        window = asyncio.Semaphore(max(scenario.assistant.spec.concurrency, 1))

        async def one(unit: Any, variants: list[EpisodeVariant]) -> None:
            async with window:
                await runner.run(unit, variants)

        await asyncio.gather(*(one(unit, vs) for unit, vs in pending))


def _counts(store: Store, run_id: str) -> dict[str, int]:
    rows = store.conn.execute("SELECT status, COUNT(*) FROM episodes WHERE run_id=? GROUP BY status", (run_id,))
    counts = {"done": 0, "error": 0}
    counts.update({r[0]: r[1] for r in rows})
    return counts
