"""Label every user turn of a stored run with one judge; resumable, concurrent, with progress."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from itertools import islice

from rich.console import Console

from testbed.judges.base import Judge, make_judge
from testbed.judges.specs import ResolvedJudge
from testbed.judges.turns import StoredTurn, label_row, stored_turns
from testbed.judges.verdict import Verdict
from testbed.progress import EpisodeProgress
from testbed.store import Store
from testbed.store.labels import JudgeIdentity, judged_turns, write_labels
from testbed.store.lease import HEARTBEAT_S, LEASE_TTL_S
from testbed.store.sqlite_store import StoreError


@dataclass(frozen=True)
class JudgeSummary:
    """What one `judge` invocation did."""

    identity: JudgeIdentity
    turns: int
    skipped: int
    scored: int
    unscored: int


def identity_of(judge: ResolvedJudge) -> JudgeIdentity:
    """The name, version and model under which a judge's labels are stored (building the judge starts nothing)."""
    return make_judge(judge).identity


JUDGE_CHUNK = 2000
"""Turns read from the store and handed to the judge at a time: a run of any size is judged in bounded memory."""


async def judge_run(store: Store, run_id: str, judge: ResolvedJudge, *, console: Console | None = None,
                    show_progress: bool = True, backend=None, chunk: int = JUDGE_CHUNK,
                    only: Collection[tuple[str, int]] | None = None) -> JudgeSummary:
    """Label the run's user turns that this judge has not scored yet (of `only`, when given: a review pays for
    those turns alone); earlier labels stay.

    Turns are read and judged `chunk` at a time, and verdicts written every `commit_every`, so
    memory stays flat however large the run, and a judge that is stopped keeps what it wrote: the
    same call again judges only the rest. A model judge's backend is started once for the whole run.
    A second process labelling the same run with the same judge is refused (StoreError) until this one ends.
    """
    labeller = make_judge(judge, backend)
    who = labeller.identity
    async with judging_lease(store, run_id, who):
        return await _judge_unscored(store, run_id, judge, labeller, backend, console, show_progress, chunk,
                                     None if only is None else frozenset(only))


def lease_key(run_id: str, who: JudgeIdentity) -> str:
    """The lease one judge identity holds on a run while it labels it (beside the run's own lease, never it)."""
    return f"judge:{run_id}:{who}"


@contextlib.asynccontextmanager
async def judging_lease(store: Store, run_id: str, who: JudgeIdentity):
    """Be the one process labelling `run_id` as `who` for the block (renewed by a heartbeat), or raise StoreError
    naming the live process that is: two processes never pay a model judge for the same turn."""
    key = lease_key(run_id, who)
    store.acquire_lease(key, f"run {run_id} is being labelled by judge {who}")
    heartbeat = asyncio.create_task(_renew(store, key))
    try:
        yield
    finally:
        heartbeat.cancel()
        await asyncio.gather(heartbeat, return_exceptions=True)
        store.release_lease(key)


def still_leased(store: Store, key: str) -> None:
    """Renew this process's judging lease before it writes labels, or raise StoreError when another process took it
    over (this one stalled past the lease's TTL): the verdicts in hand are not written, and the judge stops."""
    if not store.holds_lease(key):
        raise StoreError(f"this process lost the lease on {key} to another judge process (it stalled past "
                         f"{LEASE_TTL_S:g} s); the verdicts in hand are not written")
    store.heartbeat(key)


async def _renew(store: Store, key: str) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        store.heartbeat(key)


async def _judge_unscored(store: Store, run_id: str, judge: ResolvedJudge, labeller: Judge, backend, console, show_progress: bool,
                          chunk: int, only: frozenset[tuple[str, int]] | None = None) -> JudgeSummary:
    """Label the turns `labeller` has not scored yet, of `only` when given (the caller holds the judging lease)."""
    who = labeller.identity
    done = judged_turns(store, run_id, who, scored_only=True)
    total = todo = 0
    for key in store.turn_keys(run_id):
        if only is not None and tuple(key) not in only:
            continue
        total += 1
        todo += tuple(key) not in done
    counts = {"scored": 0, "unscored": 0}

    def save(batch: list[tuple[StoredTurn, Verdict, int]]) -> None:
        still_leased(store, lease_key(run_id, who))
        write_labels(store, run_id, who, [label_row(t.episode_id, t.turn_index, v, n) for t, v, n in batch])
        for _, v, _ in batch:
            counts["scored" if v.scored else "unscored"] += 1

    with EpisodeProgress(f"judge {who}", todo, console=console, enabled=show_progress, error_label="unscored") as progress:
        if todo:
            async with _bound(judge, labeller, backend) as bound:
                for turns in _chunks(stored_turns(store, run_id), chunk):
                    pending = [t for t in turns if (t.episode_id, t.turn_index) not in done
                               and (only is None or (t.episode_id, t.turn_index) in only)]
                    if pending:
                        await _judge_in_batches(bound, pending, save, progress)
    return JudgeSummary(who, total, total - todo, counts["scored"], counts["unscored"])


@contextlib.asynccontextmanager
async def _bound(judge: ResolvedJudge, labeller: Judge, backend):
    """The judge bound to a started model for the whole run: a model judge given no backend gets its
    agent's, started here once (not once per chunk); any other judge is used as built."""
    if backend is not None or judge.agent is None:
        yield labeller
        return
    from testbed.backends.factory import BackendPool

    async with BackendPool() as pool:
        yield make_judge(judge, await pool.backend_for(judge.agent.spec))


def _chunks(items: Iterator[StoredTurn], size: int) -> Iterator[list[StoredTurn]]:
    while chunk := list(islice(items, size)):
        yield chunk


async def _judge_in_batches(labeller: Judge, todo: list[StoredTurn], save, progress) -> None:
    """Judge the turns, writing verdicts every `labeller.commit_every` (and the rest at the end), then counting them."""
    pending: list[tuple[StoredTurn, Verdict, int]] = []

    def flush() -> None:
        save(pending)
        for _, verdict, _ in pending:
            progress.advance(error=not verdict.scored, tokens=0)
        pending.clear()

    def arrived(i: int, verdict: Verdict, attempts: int) -> None:
        pending.append((todo[i], verdict, attempts))
        if len(pending) >= labeller.commit_every:
            flush()

    await labeller.judge_all([t.item for t in todo], arrived)
    if pending:
        flush()
