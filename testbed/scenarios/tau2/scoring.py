"""Scoring finished τ² episodes off the event loop: one async call, `score`, over a worker pool.

τ²'s evaluator is CPU work (replaying the episode's tool calls, the checks). Run on the event loop it
would stall every episode in flight; `score` hands it to a pool and awaits the result. The pool is a
thread pool of its own: the evaluation costs about two milliseconds of CPU per airline episode
(testbed.scenarios.tau2.simulation_reward) in pieces far shorter than the interpreter's switch
interval, so the loop keeps running beside it, and a thread shares the process's parsed domains and
cached expected states. Worker processes (`kind="processes"`, each loading the domain once) escape the
GIL but cost more than they save at that size: benchmarks/tau2_scoring_pool.py measured 400 airline
episodes at 315 episodes/s and 1.9 CPU ms each in threads, 286 episodes/s and 14 CPU ms each (the
workers' start and the messages' pickling included) in processes, against 2.8 episodes/s and 185 CPU
ms each for τ²'s own evaluator in `asyncio.to_thread`, which also held the loop for up to 2 s.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from testbed.loop.orchestrator import TerminationReason
from testbed.scenarios.tau2.domains import Tau2Domain, domain
from testbed.scenarios.tau2.evaluation import evaluate
from testbed.store import EpisodeReward
from testbed.transcript import Message

POOL_KINDS = ("threads", "processes")
"""The scoring pools: threads (the default) or worker processes."""
THREAD_WORKERS = 2
"""Scoring threads: evaluation holds the GIL, so more threads add contention, not speed; two let a slow task's
evaluation not hold up the next one."""

_pools: dict[str, Executor] = {}
_pools_lock = threading.Lock()


def _process_workers() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores - 1, 8))


def scoring_pool(kind: str = "threads") -> Executor:
    """The process's scoring pool of `kind` (one of POOL_KINDS), started at first use and kept."""
    if kind not in POOL_KINDS:
        raise ValueError(f"no scoring pool {kind!r}: use one of {', '.join(POOL_KINDS)}")
    with _pools_lock:
        pool = _pools.get(kind)
        if pool is None:
            if kind == "processes":
                pool = ProcessPoolExecutor(_process_workers(), mp_context=multiprocessing.get_context("spawn"))
            else:
                pool = ThreadPoolExecutor(THREAD_WORKERS, thread_name_prefix="tau2-scoring")
            _pools[kind] = pool
        return pool


def _evaluate_in_worker(domain_name: str, evaluation_name: str, task: Any, messages: list[Message],
                        termination: TerminationReason) -> EpisodeReward | None:
    d = domain(domain_name)
    if evaluation_name != d.evaluation_name:
        from dataclasses import replace

        d = replace(d, evaluation_name=evaluation_name)
    return evaluate(d, task, messages, termination)


async def score(d: Tau2Domain, task: Any, messages: list[Message], termination: TerminationReason,
                kind: str = "threads") -> EpisodeReward | None:
    """τ²'s reward for a finished episode (testbed.scenarios.tau2.evaluation.evaluate: None where a judge would be
    needed, EvaluationFailed when the evaluator raises), computed in the scoring pool while the event loop runs on."""
    loop = asyncio.get_running_loop()
    pool = scoring_pool(kind)
    if isinstance(pool, ProcessPoolExecutor):
        return await loop.run_in_executor(pool, _evaluate_in_worker, d.name, d.evaluation_name, task, list(messages), termination)
    return await loop.run_in_executor(pool, evaluate, d, task, list(messages), termination)
