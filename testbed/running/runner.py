"""Runs a scenario into the store: plans episodes, skips finished ones, shows progress, cleans up.

The order of checks is deliberate: the spec, the dataset and the backends' capabilities are
checked before any server starts, and servers are checked before any episode runs, so bad input
fails in seconds and a resumed run never loses or repeats a finished episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from testbed.backends.base import Backend, BackendError
from testbed.backends.factory import BackendPool, capabilities_of, managed_model_problem
from testbed.concurrency import gather_or_cancel
from testbed.frameworks import check_framework
from testbed.frameworks.base import owns_client
from testbed.progress import EpisodeProgress
from testbed.provenance import git_revision, package_versions
from testbed.scenarios.base import EpisodeVariant, RunContext, ScenarioKind
from testbed.specs.errors import SpecError
from testbed.specs.loader import ResolvedScenario
from testbed.specs.registries import BACKENDS, KINDS, default_framework
from testbed.store import EpisodeOutcome, Store
from testbed.store.episode_groups import EpisodeGroups
from testbed.store.lease import HEARTBEAT_S
from testbed.store.replica_counts import add_replica_counts
from testbed.running.user_faults import store_user_faults
from testbed.store.sqlite_store import RUN_COST_BOOKING_S, StoreError


@dataclass(frozen=True)
class RunSummary:
    """How a run ended: counts over the whole run, not just this invocation."""

    run_id: str
    planned: int
    skipped: int
    done: int
    errors: int
    status: str
    log: str | None = None
    """The run's log file (frameworks' own log records, failed episodes' tracebacks), when anything was written."""


def default_run_id(scenario: ResolvedScenario, framework: str = default_framework(), store: Store | None = None) -> str:
    """The same spec (and framework) gives the same run id, so running it again resumes it; a native run's
    id is the scenario name and spec hash, a framework with its own client has its name between them. With
    `store`, a run the store holds under the id the spec had before run ids left out where servers live is that run's."""
    middle = f"{framework}-" if owns_client(framework) else ""
    run_id = f"{scenario.spec.name}-{middle}{scenario.fingerprint()}"
    if store is None:
        return run_id
    return store.resumable_run_id(run_id, f"{scenario.spec.name}-{middle}{scenario.legacy_fingerprint()}")


def preflight(scenario: ResolvedScenario, framework: str = default_framework()) -> None:
    """Refuse what cannot work, before anything starts: a user mode the backend cannot do, an unknown model,
    a scenario the framework cannot run (or a framework that is not installed), the scripted τ² user outside τ² tasks."""
    check_framework(framework, scenario)
    for agent in (scenario.assistant, scenario.user):
        problem = managed_model_problem(agent.spec)
        if problem:
            raise SpecError(agent.path, "model", problem, "use `embedded`, a folder with the model, or download it first")
        check = BACKENDS.entry(agent.spec.backend).check
        if check is not None and (found := check(agent.spec)) is not None:
            raise SpecError(agent.path, *found)
        if BACKENDS.entry(agent.spec.backend).scripted_user and not KINDS.entry(scenario.spec.kind).scripted_user:
            raise SpecError(agent.path, "backend", f"agent {agent.spec.name} is the scripted τ² user, which plays only the "
                            f"user of τ² tasks, not a `{scenario.spec.kind}` scenario", "name a model agent for this scenario")
    if "raw" in scenario.spec.user_modes and not capabilities_of(scenario.user.spec).continue_user_turn:
        raise SpecError(
            scenario.path, "user_modes",
            f"user mode `raw` needs a backend that continues the user turn; agent {scenario.user.spec.name} "
            f"({scenario.user.path}) uses backend `{scenario.user.spec.backend}` without that capability",
            "use a vLLM agent for the user, or user_modes: [instructed]",
        )


def scenario_kind(scenario: ResolvedScenario) -> ScenarioKind:
    """The kind that plans and runs this scenario, as registered in KINDS (imported when needed)."""
    return KINDS.entry(scenario.spec.kind).runner()


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
    framework: str = default_framework(),
    wire: bool | None = None,
    timing: Callable[[], contextlib.AbstractContextManager] | None = None,
) -> RunSummary:
    """Run (or resume) a scenario; every finished episode is committed as it finishes.

    The run's lease is taken first, so a second process on the same run is refused before it
    starts anything, and renewed until the end; servers the agents name by URL are checked next, so a dead one is noticed in
    seconds, before the plan is built; managed servers start only when there is work to do.
    `backends` (by role: `assistant`, `user`) replaces the backends the agent specs describe;
    tests pass scripted ones here. `framework` runs the turn loops (testbed.frameworks); `wire` keeps
    the wire log of every request (default: for every framework but `native`, whose requests are the
    testbed's own). A framework's requests pass the wire recorder either way: it handles their faults
    as the native backend does its own (testbed.wire.faults). `timing` makes a context manager entered just
    around the episodes (not the lease, servers or plan), so a benchmark times the hot path without patching it.
    """
    preflight(scenario, framework)
    run_id = run_id or default_run_id(scenario, framework, store)
    scenario = scenario.as_made_under(store.run_fingerprint(run_id))
    wire = owns_client(framework) if wire is None else wire
    async with leased_run(store, run_id) as state:
        async with BackendPool() as pool:
            chosen = dict(backends) if backends else await _backends_from_specs(scenario, pool, managed=False)
            planned = await asyncio.to_thread(plan, scenario)
            total = sum(len(v) for _, v in planned)
            store.begin_run(run_id, scenario=scenario.spec.name, kind=scenario.spec.kind, spec=scenario.as_dict(),
                            fingerprint=scenario.fingerprint(), versions=package_versions(), git_revision=git_revision(),
                            planned=total, framework=framework, legacy_fingerprint=scenario.legacy_fingerprint())
            pending = pending_units(store, run_id, planned)
            todo = sum(len(vs) for _, vs in pending)
            if todo:
                if not backends:
                    chosen.update(await _backends_from_specs(scenario, pool, managed=True))
                async with timed(store, run_id), wire_recorder(wire or owns_client(framework)) as recorder:
                    with replica_ledger(store, run_id) as watch, run_log(store, run_id, framework) as state.log:
                        watch(chosen.values())
                        with (timing or contextlib.nullcontext)():
                            await execute_units(scenario, store, run_id, pending, todo, chosen, console, show_progress, framework,
                                                recorder, keep_wire=wire)
        store_user_faults(store, run_id, scenario.spec.kind, console)
        return state.finish(store, total, todo)


def run_log(store: Store, run_id: str, framework: str) -> contextlib.AbstractContextManager:
    """Where a framework run's log records go (testbed.frameworks.run_log); nothing for a native run."""
    if not owns_client(framework):
        return contextlib.nullcontext()
    from testbed.frameworks.run_log import framework_log, log_path

    return framework_log(log_path(store.path, run_id))


@dataclass
class RunState:
    """How the run in progress will be recorded when it ends: `interrupted` unless it gets further."""

    run_id: str
    status: str = "interrupted"
    log: Any = None

    def finish(self, store: Store, total: int, todo: int) -> RunSummary:
        """The run's summary over all invocations; `done` when every planned episode finished."""
        from testbed.frameworks.run_log import written

        counts = store.episode_counts(self.run_id)
        self.status = "done" if counts["done"] == total else "incomplete"
        log = written(self.log) if self.log is not None else None
        return RunSummary(self.run_id, total, total - todo, counts["done"], counts["error"], self.status, str(log) if log else None)


@contextlib.asynccontextmanager
async def leased_run(store: Store, run_id: str):
    """Hold the run's lease (renewed by a heartbeat) for the block, and record how the run ended.

    A second process on the same run is refused here, before anything starts.
    """
    store.acquire_lease(run_id)
    heartbeat = asyncio.create_task(_heartbeat(store, run_id))
    state = RunState(run_id)
    try:
        yield state
    except (BackendError, StoreError):
        state.status = "failed"
        raise
    finally:
        heartbeat.cancel()
        await asyncio.gather(heartbeat, return_exceptions=True)
        if store.holds_lease(run_id) and store.run_exists(run_id):
            store.finish_run(run_id, state.status)
        store.release_lease(run_id)


@contextlib.asynccontextmanager
async def timed(store: Store, run_id: str):
    """Add the block's wall time and this process's CPU time to the run's cost as it goes (every RUN_COST_BOOKING_S,
    from the block's first second) and when it ends, however it ends (SIGTERM and Ctrl-C cancel the block, so the last
    booking runs), so an invocation killed with SIGKILL loses at most a second of its share, never all of it."""
    mark = [time.perf_counter(), time.process_time()]

    def book() -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        store.add_run_cost(run_id, wall - mark[0], cpu - mark[1])
        mark[:] = [wall, cpu]

    async def every_second() -> None:
        while True:
            await asyncio.sleep(RUN_COST_BOOKING_S)
            book()

    booking = asyncio.create_task(every_second())
    try:
        yield
    finally:
        booking.cancel()
        await asyncio.gather(booking, return_exceptions=True)
        book()


@contextlib.contextmanager
def replica_ledger(store: Store, run_id: str):
    """Yield `watch(backends)`; on leaving, however the block ends, add what each watched replica set's replicas
    served and handed on to the run's counts (shown by `testbed report`)."""
    watched: dict[int, Any] = {}

    def watch(backends) -> None:
        watched.update({id(b): b for b in backends if hasattr(b, "counts")})

    try:
        yield watch
    finally:
        add_replica_counts(store, run_id, [count for backend in watched.values() for count in backend.counts()])


def pending_units(store: Store, run_id: str, planned: list[tuple[Any, list[EpisodeVariant]]]) -> list[tuple[Any, list[EpisodeVariant]]]:
    """The units that still have unfinished variants, with only those variants."""
    done = store.done_episode_ids(run_id)
    pending = [(unit, [v for v in variants if v.key.episode_id not in done]) for unit, variants in planned]
    return [(unit, vs) for unit, vs in pending if vs]


async def _backends_from_specs(scenario: ResolvedScenario, pool: BackendPool, *, managed: bool) -> dict[str, Backend]:
    """Started backends for the roles whose agent is (or is not) a managed server; one per distinct spec."""
    by_spec: dict[str, Backend] = {}
    chosen = {}
    for role, agent in (("assistant", scenario.assistant), ("user", scenario.user)):
        if agent.spec.managed != managed:
            continue
        ident = agent.spec.model_dump_json()
        if ident not in by_spec:
            by_spec[ident] = await pool.backend_for(agent.spec)
        chosen[role] = by_spec[ident]
    return chosen


async def _heartbeat(store: Store, run_id: str) -> None:
    """Renew the lease while the run lasts, through server start-up and planning (which runs in a thread)."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        store.heartbeat(run_id)


def wire_recorder(enabled: bool) -> contextlib.AbstractAsyncContextManager:
    """The wire recorder of a run that keeps a wire log, else nothing."""
    from testbed.wire import WireRecorder

    return WireRecorder() if enabled else contextlib.nullcontext()


RUN_GC_THRESHOLD = 50_000
"""Net new container objects between two young-generation collections while a run lasts (Python's default: 700)."""


@contextlib.contextmanager
def lean_collector():
    """The garbage collector set for a run of many concurrent conversations, and put back as it was after.

    Two costs go: the objects alive when the block starts (modules, specs, the plan: hundreds of
    thousands) are frozen out of the collector's full passes, which would walk them all each time;
    and young collections run every RUN_GC_THRESHOLD new objects rather than every 700, since a
    thousand live conversations keep most young objects alive and each early pass only moves them
    along. Measured by benchmarks/hot_path.py: the collector's share of a turn falls from about a
    fifth to a twentieth. Nothing is lost: cyclic garbage is still collected, only less often, and
    what was frozen is handed back to the collector afterwards.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(RUN_GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


async def execute_units(scenario, store, run_id, pending, todo, backends, console, show_progress, framework=default_framework(), recorder=None,
                        title: str | None = None, keep_wire: bool = True) -> None:
    """Run the pending units with at most `concurrency` episodes in flight; the first fatal error stops all.

    Finished episodes are committed in groups (testbed.store.episode_groups), and the last group is
    committed before this returns, however it ends: an error, a cancellation, Ctrl-C.
    """
    limit = max(scenario.assistant.spec.concurrency, 1)
    with EpisodeProgress(title or scenario.spec.name, todo, console=console, enabled=show_progress) as progress, \
            contextlib.closing(EpisodeGroups(store, run_id)) as episodes, lean_collector():

        def sink(outcome: EpisodeOutcome) -> None:
            episodes.write(outcome)
            progress.advance(error=outcome.status != "done", tokens=outcome.usage.completion_tokens)

        context = RunContext(scenario, backends, store.shared_answers(run_id), lambda a: store.write_shared_answer(run_id, a),
                             sink, asyncio.Semaphore(limit), framework, recorder, keep_wire)
        runner = scenario_kind(scenario).runner(context)
        units = iter(pending)

        async def worker() -> None:
            for unit, variants in units:
                await runner.run(unit, variants)

        await gather_or_cancel(worker() for _ in range(min(limit, len(pending))))

