"""What scoring finished τ² episodes costs, and how long it holds up the event loop: threads against processes, and
against τ²'s own evaluator in a thread (what the kind did before).

Episodes: the oracle (testbed.scenarios.tau2.oracle) on the airline tasks scored by actions and state, each played
once, then `--episodes` of them (cycled) scored all at once with `testbed.scenarios.tau2.scoring.score` in a thread
pool and in a process pool (spawned workers, each loading the domain in its first evaluation: the first round pays
it, so the pool is warmed with one episode per worker first), and with `asyncio.to_thread` of τ²'s
`evaluate_simulation` (its hashes, its expected state rebuilt every time). Meanwhile a heartbeat task sleeps 1 ms at a
time and records how late it wakes: the longest and the 99th-percentile delay is how long scoring held the loop.

Figures per pool: episodes scored per second (wall), CPU ms per episode (this process plus its reaped workers:
`RUSAGE_SELF` + `RUSAGE_CHILDREN`, the process pool shut down before reading), the loop's longest and p99 delay,
and whether every reward equals τ²'s.

    .venv/bin/python benchmarks/tau2_scoring_pool.py
    .venv/bin/python benchmarks/tau2_scoring_pool.py --episodes 200 --domain retail
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
import uuid

from testbed.scenarios.tau2 import scoring
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.evaluation import TAU2_TERMINATION
from testbed.scenarios.tau2.oracle import expected_calls, oracle_episode
from testbed.scenarios.tau2.trajectory import to_tau2

SCORED_BY_ACTIONS_AND_STATE = {"DB", "ACTION", "COMMUNICATE"}


def cpu_s() -> float:
    """CPU seconds of this process and of its children reaped so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def tau2_reward(d, task, messages, termination) -> float:
    """τ²'s own evaluate_simulation on the episode (the reference, and what the kind ran before)."""
    from tau2.data_model.simulation import SimulationRun
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    run = SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time="0", end_time="0", duration=0.0,
                        termination_reason=TAU2_TERMINATION[termination], messages=to_tau2(messages))
    return float(evaluate_simulation(run, task, EvaluationType.ALL, solo_mode=False, domain=d.evaluation_name).reward)


async def heartbeat(delays: list[float], stop: asyncio.Event) -> None:
    """Sleep 1 ms at a time, recording how late each wake-up is."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(0.001)
        delays.append(time.perf_counter() - t0 - 0.001)


async def timed(name: str, d, episodes: list, score_one) -> dict:
    """Score every episode at once with `score_one`; wall, CPU, loop delays and the rewards."""
    delays: list[float] = []
    stop = asyncio.Event()
    beat = asyncio.create_task(heartbeat(delays, stop))
    c0, t0 = cpu_s(), time.perf_counter()
    rewards = await asyncio.gather(*(score_one(d, task, messages, termination) for task, messages, termination in episodes))
    wall = time.perf_counter() - t0
    stop.set()
    await beat
    if name == "processes":
        scoring.scoring_pool("processes").shutdown(wait=True)
        scoring._pools.pop("processes", None)
    cpu = cpu_s() - c0
    delays.sort()
    return {"name": name, "episodes_per_s": len(episodes) / wall, "cpu_ms_per_episode": 1000 * cpu / len(episodes),
            "loop_max_ms": 1000 * delays[-1], "loop_p99_ms": 1000 * delays[int(0.99 * (len(delays) - 1))],
            "rewards": [r if isinstance(r, float) else r.reward for r in rewards]}


async def bench(args: argparse.Namespace) -> list[dict]:
    """Play the oracle episodes, then time each pool on them."""
    d = domain(args.domain)
    ids = [t.id for t in d.tasks.values() if t.evaluation_criteria is not None and expected_calls(t)
           and {b.value for b in t.evaluation_criteria.reward_basis} <= SCORED_BY_ACTIONS_AND_STATE]
    played = []
    for task_id in ids:
        transcript, termination, _ = await oracle_episode(args.domain, task_id)
        played.append((d.tasks[task_id], transcript.messages, termination))
    episodes = [played[i % len(played)] for i in range(args.episodes)]
    workers = scoring._process_workers()
    await asyncio.gather(*(scoring.score(d, *played[i], kind="processes") for i in range(workers)))

    async def before(d, task, messages, termination):
        return await asyncio.to_thread(tau2_reward, d, task, messages, termination)

    rows = [await timed("threads", d, episodes, lambda *a: scoring.score(*a, kind="threads")),
            await timed("processes", d, episodes, lambda *a: scoring.score(*a, kind="processes")),
            await timed("τ² evaluator, to_thread", d, episodes[: args.reference_episodes], before)]
    reference = rows[-1]["rewards"]
    for row in rows:
        row["same_as_tau2"] = row["rewards"][: len(reference)] == reference
    return rows


def main() -> None:
    """Parse arguments, run, print the table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--domain", default="airline", choices=("mock", "airline", "retail"))
    p.add_argument("--episodes", type=int, default=400, help="episodes scored by each pool")
    p.add_argument("--reference-episodes", type=int, default=40, help="episodes scored by τ²'s own evaluator (slow)")
    args = p.parse_args()
    rows = asyncio.run(bench(args))
    print(f"τ² {args.domain}: oracle episodes scored all at once; {scoring._process_workers()} worker process(es), "
          f"{scoring.THREAD_WORKERS} scoring thread(s)")
    print(f"  {'pool':<26} {'episodes/s':>10} {'CPU ms/episode':>15} {'loop max ms':>12} {'loop p99 ms':>12} {'τ² rewards':>11}")
    for r in rows:
        print(f"  {r['name']:<26} {r['episodes_per_s']:>10.1f} {r['cpu_ms_per_episode']:>15.2f} {r['loop_max_ms']:>12.1f} "
              f"{r['loop_p99_ms']:>12.2f} {'same' if r['same_as_tau2'] else 'DIFFER':>11}")
    print(f"  median rewards: {statistics.fmean(rows[0]['rewards']):.2f}")


if __name__ == "__main__":
    sys.exit(main())
