"""Scoring off the event loop: `score` gives `evaluate`'s reward (and its failure) from a pool while the loop runs on."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from testbed.scenarios.tau2 import scoring
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.evaluation import EvaluationFailed, evaluate
from testbed.scenarios.tau2.oracle import expected_calls, oracle_episode


def first_tasks(name: str, count: int) -> list[str]:
    return [t.id for t in domain(name).tasks.values() if t.evaluation_criteria is not None and expected_calls(t)
            and {b.value for b in t.evaluation_criteria.reward_basis} <= {"DB", "ACTION", "COMMUNICATE"}][:count]


async def played(name: str, count: int) -> list:
    d = domain(name)
    out = []
    for task_id in first_tasks(name, count):
        transcript, termination, _ = await oracle_episode(name, task_id)
        out.append((d.tasks[task_id], transcript.messages, termination))
    return out


async def test_score_is_evaluate_in_a_pool_thread_while_the_loop_runs_on(monkeypatch):
    d = domain("airline")
    episodes = await played("airline", 6) * 5
    threads: set[int] = set()

    def recorded(*args):
        threads.add(threading.get_ident())
        return evaluate(*args)

    monkeypatch.setattr(scoring, "evaluate", recorded)
    delays: list[float] = []
    done = asyncio.Event()

    async def heartbeat():
        while not done.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(0.001)
            delays.append(time.perf_counter() - t0)

    beat = asyncio.create_task(heartbeat())
    rewards = await asyncio.gather(*(scoring.score(d, *e) for e in episodes))
    done.set()
    await beat
    assert rewards == [evaluate(d, *e) for e in episodes]
    assert threading.get_ident() not in threads and threads
    assert len(delays) >= 5 and sorted(delays)[len(delays) // 2] < 0.05, "the loop kept its heartbeat while scoring"


async def test_an_evaluation_that_raises_is_the_callers_evaluation_failed(monkeypatch):
    from tau2.evaluator.evaluator_action import ActionEvaluator

    def broken(*args, **kwargs):
        raise KeyError("no such reservation")

    ((task, messages, termination),) = await played("mock", 1)
    monkeypatch.setattr(ActionEvaluator, "calculate_reward", broken)
    with pytest.raises(EvaluationFailed, match="KeyError"):
        await scoring.score(domain("mock"), task, messages, termination)


async def test_worker_processes_give_the_same_reward():
    d = domain("mock")
    episodes = await played("mock", 2)
    try:
        got = [await scoring.score(d, *e, kind="processes") for e in episodes]
    finally:
        scoring._pools.pop("processes").shutdown(wait=True)
    assert got == [evaluate(d, *e) for e in episodes] and all(r.reward == 1.0 for r in got)


def test_an_unknown_pool_is_refused_naming_the_kinds():
    with pytest.raises(ValueError, match="threads, processes"):
        scoring.scoring_pool("fibres")
