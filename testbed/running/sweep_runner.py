"""Runs a sweep into one run: cell after cell, each model's server started once and stopped when no longer needed.

Cells (assistant × user × dataset, testbed.specs.sweep) run in the sweep's order, which keeps an
agent's cells together. Before a cell starts, the servers of agents that no remaining cell uses
are stopped, so with `user: self` only one model is in memory at a time, and a fixed user model
stays up throughout. Everything else is the cell scenario's: stable ids, shared answers in a probe,
one commit per episode, and a resumed sweep skips every finished episode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from rich.console import Console

from testbed.backends.base import Backend
from testbed.backends.factory import BackendPool
from testbed.provenance import git_revision, package_versions
from testbed.running.runner import RunSummary, execute_units, leased_run, pending_units, plan, preflight, replica_ledger, timed
from testbed.running.user_faults import store_user_faults
from testbed.specs.loader import ResolvedAgent, ResolvedScenario
from testbed.specs.sweep import ResolvedSweep
from testbed.store import Store


def sweep_run_id(sweep: ResolvedSweep, store: Store | None = None) -> str:
    """The same sweep gives the same run id, so running it again resumes it (with `store`, a run made under the id
    the sweep had before run ids left out where servers live is that run's)."""
    run_id = f"{sweep.spec.name}-{sweep.fingerprint()}"
    return run_id if store is None else store.resumable_run_id(run_id, f"{sweep.spec.name}-{sweep.legacy_fingerprint()}")


def preflight_sweep(sweep: ResolvedSweep) -> None:
    """Refuse a sweep any of whose cells cannot run (an unprepared model, a user mode a backend cannot do)."""
    for cell in sweep.cells:
        preflight(cell)


def _ident(agent: ResolvedAgent) -> str:
    return agent.spec.model_dump_json()


class AgentServers:
    """One backend pool per distinct agent, opened on first need and closed once no remaining cell needs it."""

    def __init__(self, console: Console | None) -> None:
        self._pools: dict[str, tuple[BackendPool, Backend]] = {}
        self._console = console

    async def backends_for(self, cell: ResolvedScenario, later: list[ResolvedScenario]) -> dict[str, Backend]:
        """Backends by role for the cell; agents no cell from here on uses are closed first, freeing their memory."""
        needed = {_ident(a) for c in [cell, *later] for a in (c.assistant, c.user)}
        for ident in [i for i in self._pools if i not in needed]:
            pool, _ = self._pools.pop(ident)
            await pool.close()
        out = {}
        for role, agent in (("assistant", cell.assistant), ("user", cell.user)):
            ident = _ident(agent)
            if ident not in self._pools:
                if agent.spec.managed and self._console is not None:
                    self._console.print(f"starting the model server for {agent.spec.name} ({agent.spec.model})", highlight=False)
                pool = BackendPool()
                try:
                    self._pools[ident] = (pool, await pool.backend_for(agent.spec))
                except BaseException:
                    await pool.close()
                    raise
            out[role] = self._pools[ident][1]
        return out

    async def close(self) -> None:
        """Close every backend and stop every server still running."""
        while self._pools:
            _, (pool, _) = self._pools.popitem()
            await pool.close()

    async def __aenter__(self) -> "AgentServers":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def run_sweep(
    sweep: ResolvedSweep,
    store: Store,
    *,
    run_id: str | None = None,
    console: Console | None = None,
    show_progress: bool = True,
    backends: Mapping[str, Backend] | None = None,
) -> RunSummary:
    """Run (or resume) a sweep into one run; every finished episode is committed as it finishes.

    `backends` (by agent name) replaces the backends the agent specs describe; tests pass scripted
    ones here. The run is stored as a run of the cells' kind (probe, dialogue or tau2), so `report`, `judge`,
    `plot`, `graph` and `export` read it as one.
    """
    preflight_sweep(sweep)
    run_id = run_id or sweep_run_id(sweep, store)
    sweep = sweep.as_made_under(store.run_fingerprint(run_id))
    async with leased_run(store, run_id) as state:
        planned = first_plans([(cell, await asyncio.to_thread(plan, cell)) for cell in sweep.cells])
        total = sum(len(v) for _, units in planned for _, v in units)
        store.begin_run(run_id, scenario=sweep.spec.name, kind=sweep.spec.scenario, spec=sweep.as_dict(), fingerprint=sweep.fingerprint(),
                        versions=package_versions(), git_revision=git_revision(), planned=total,
                        legacy_fingerprint=sweep.legacy_fingerprint())
        work = [(cell, pending) for cell, units in planned if (pending := pending_units(store, run_id, units))]
        todo = sum(len(vs) for _, pending in work for _, vs in pending)
        if todo:
            async with AgentServers(console if show_progress else None) as servers, timed(store, run_id):
                with replica_ledger(store, run_id) as watch:
                    await _run_cells(work, store, run_id, sweep.spec.name, backends, servers, watch, console, show_progress)
        store_user_faults(store, run_id, sweep.spec.scenario, console)
        return state.finish(store, total, todo)


def first_plans(planned: list) -> list:
    """Each cell's planned units without the episodes an earlier cell already plans: cells over the same real
    conversations share one human-reference episode per item (its id names no agent), which is run and counted once."""
    seen: set[str] = set()
    out = []
    for cell, units in planned:
        kept = []
        for unit, variants in units:
            fresh = [v for v in variants if v.key.episode_id not in seen]
            seen.update(v.key.episode_id for v in fresh)
            if fresh:
                kept.append((unit, fresh))
        out.append((cell, kept))
    return out


async def _run_cells(work, store, run_id, name, backends, servers, watch, console, show_progress) -> None:
    """Each cell's pending units, in order, on the backends its agents name."""
    for k, (cell, pending) in enumerate(work):
        if backends:
            chosen = {"assistant": backends[cell.assistant.spec.name], "user": backends[cell.user.spec.name]}
        else:
            chosen = await servers.backends_for(cell, [c for c, _ in work[k + 1:]])
        watch(chosen.values())
        facing = "" if cell.user.spec.name == cell.assistant.spec.name else f" · user {cell.user.spec.name}"
        title = f"{name} [{k + 1}/{len(work)}] {cell.assistant.spec.name} × {cell.spec.dataset}{facing}"
        await execute_units(cell, store, run_id, pending, sum(len(vs) for _, vs in pending), chosen, console, show_progress, title=title)
