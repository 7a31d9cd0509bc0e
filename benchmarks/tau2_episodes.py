"""What a τ² airline episode costs the client, tools and τ²'s evaluator included, and what a fresh environment per episode saves.

The mock OpenAI server (benchmarks/mock_openai.py) runs as a subprocess on the cores the client
does not use, with a tool script built at run time from the installed τ² package's airline database
(nothing of τ²'s data is in this file): `get_user_details` of a user who has reservations, then
`get_reservation_details` of one of them together with one of an id the database lacks (a tool
error in every episode), then `search_direct_flight` on a route and date of a real flight. The
simulated user (the same server, no tools) stops on its `--user-turns`-th turn by the mock's
SAY_MARKER_AT rule in its prompt file, so each assistant turn before that is one step's calls, their
results, then text. The client pins itself to one core and runs `run_scenario` on a τ² airline spec
(`backend: openai`, real HTTP, a real SQLite store, no progress bar): `--episodes` episodes (the
`base` split's tasks, trials added past 50) with the agent's `concurrency`, after an untimed warm-up
run of two episodes; `--rounds` timed runs, each under a new run id, medians reported.

Figures, per round (from the run's `timing` hook, entered just around the episodes):

- **episodes/s** and **turns/s**: episodes finished, and generated turns (assistant and user messages
  from the server, the scripted greeting not counted) over the episodes' wall time.
- **CPU ms per turn / per episode**: the client process's CPU time (`time.process_time()`, every
  thread: the event loop, tool execution, τ²'s evaluator in its worker thread, SQLite) over them.
- **evaluation**: CPU and wall ms per call of `testbed.scenarios.tau2.evaluation.evaluate`. The kind
  and its scoring pool call it by the name they imported, so for the benchmark's run their `evaluate` is bound to
  a wrapper that times the library's function in its thread (`time.thread_time()`); nothing in the
  library is edited, and the binding is restored afterwards.
- **peak RSS**: `getrusage(RUSAGE_SELF).ru_maxrss` after loading the domain, after the runs and after
  the environment comparison (each fresh parse holds another database for a while).

Then, side by side in the same process, `--env-episodes` times each, in alternating order: (a) the
testbed's environment per episode (`domain('airline').new_environment()`, one parse per process and
records copied on access) against (b) a freshly parsed τ² environment
(`tau2.domains.airline.environment.get_environment()`, what a naive loop pays), each built alone and
built then given the script's tool calls (a search reads every flight, and the testbed's database
copies each record it hands out, so the calls are where its cost shows); and τ²'s evaluator on a
stored episode building its environments through the testbed's registered constructor against
τ²'s own `airline` one.

The file is not called tau2.py: by that name it would be imported instead of the τ² package by every
process that has benchmarks/ first on its path (this script's own, and the tests that import the mock).

    .venv/bin/python benchmarks/tau2_episodes.py
    .venv/bin/python benchmarks/tau2_episodes.py --episodes 20 --rounds 1 --env-episodes 5
    .venv/bin/python benchmarks/tau2_episodes.py --latency-ms 100 --concurrency 50 --json /tmp/tau2_episodes.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import gc
import json
import math
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from frameworks import machine, measured, mock_server, pin_client

import testbed.scenarios.tau2.scoring as tau2_scoring
from testbed.running.runner import run_scenario
from testbed.scenarios.tau2.domains import Tau2Domain, domain
from testbed.scenarios.tau2.evaluation import evaluate
from testbed.specs.loader import ResolvedScenario, load_scenario
from testbed.store import Store

MISSING_RESERVATION = "NO-SUCH-RESERVATION"
"""A reservation id the script asks for that the database lacks (checked at run time): one tool error per episode."""
TASKS_PER_TRIAL = 50
"""The airline `base` split's size: more episodes than this add trials."""


def airline_script(d: Tau2Domain) -> list[list[dict]]:
    """The mock's tool script from the installed airline database: a user's details, one of their reservations with
    one that does not exist, a real flight's route and date."""
    db = d.new_environment().tools.db
    user = next(u for u in db.users.values() if u.reservations)
    flight = next(f for f in db.flights.values() if f.dates)
    assert MISSING_RESERVATION not in db.reservations
    return [[{"name": "get_user_details", "arguments": {"user_id": user.user_id}}],
            [{"name": "get_reservation_details", "arguments": {"reservation_id": user.reservations[0]}},
             {"name": "get_reservation_details", "arguments": {"reservation_id": MISSING_RESERVATION}}],
            [{"name": "search_direct_flight", "arguments": {"origin": flight.origin, "destination": flight.destination,
                                                            "date": next(iter(flight.dates))}}]]


def scripted_mock(latency_ms: float, script: list[list[dict]], cores: set[int], folder: Path):
    """The mock server with the tool script, as a subprocess pinned to `cores`: yields (base_url, pid)."""
    script_file = folder / "script.json"
    script_file.write_text(json.dumps(script))
    return mock_server(latency_ms, 8, cores, "--tool-script", str(script_file))


def write_spec(folder: Path, name: str, base_url: str, episodes: int, args: argparse.Namespace) -> ResolvedScenario:
    """A τ² airline scenario of at least `episodes` episodes on the mock server, resolved as `testbed run` would."""
    (folder / "prompts").mkdir(exist_ok=True)
    marker_at = 2 * args.user_turns - 1
    prompt = f"SAY_MARKER_AT:{marker_at}:###STOP###\n\n{{guidelines}}\n\n<scenario>\n{{scenario}}\n</scenario>\n"
    (folder / "prompts" / "user.md").write_text(prompt)
    agent = {"name": "mock", "backend": "openai", "model": "mock", "base_url": base_url, "concurrency": args.concurrency,
             "max_retries": 0}
    (folder / "mock.yaml").write_text(yaml.safe_dump(agent))
    trials = math.ceil(episodes / TASKS_PER_TRIAL)
    scenario = {"kind": "tau2", "name": name, "domain": "airline", "tasks": {"split": "base", "limit": math.ceil(episodes / trials)},
                "trials": trials, "assistant": "mock.yaml", "user": "mock.yaml", "user_prompt_file": "prompts/user.md",
                "temperatures": [0.0], "max_tokens": 64, "max_steps": 60}
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(scenario))
    return load_scenario(folder / f"{name}.yaml")


EVALUATING = threading.local()
"""`active` is True on a thread while it runs τ²'s evaluator under an EvaluationClock (its environment calls are the evaluator's)."""


class EvaluationClock:
    """`evaluate` as the kind's scoring pool (testbed.scenarios.tau2.scoring) calls it, bound to a wrapper that
    times each call in its own thread, while entered."""

    def __init__(self) -> None:
        self.cpu_s: list[float] = []
        self.wall_s: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        c0, t0 = time.thread_time(), time.perf_counter()
        EVALUATING.active = True
        try:
            return evaluate(*args, **kwargs)
        finally:
            EVALUATING.active = False
            with self._lock:
                self.cpu_s.append(time.thread_time() - c0)
                self.wall_s.append(time.perf_counter() - t0)

    def __enter__(self) -> "EvaluationClock":
        tau2_scoring.evaluate = self
        return self

    def __exit__(self, *exc: object) -> None:
        tau2_scoring.evaluate = evaluate


async def one_run(scenario: ResolvedScenario, store: Store, run_id: str, server_pid: int, framework: str = "native",
                  wire: bool | None = None) -> dict:
    """One `run_scenario` under `run_id` (by `framework`), its episodes timed; counts and rewards read from the store after."""
    timing: dict[str, float] = {}
    timed_episodes = functools.partial(measured, server_pid, timing)

    gc.collect()
    with EvaluationClock() as clock:
        summary = await run_scenario(scenario, store, run_id=run_id, show_progress=False, timing=timed_episodes,
                                     framework=framework, wire=wire)
    episodes = store.episodes(run_id)
    rewards = store.rewards(run_id)
    turns = calls = errors = 0
    for e in episodes:
        for m in store.messages(run_id, e.episode_id):
            turns += m.role in ("assistant", "user") and m.sampling is not None
            calls += len(m.tool_calls)
            errors += m.tool_result is not None and m.tool_result.error
    reasons = store.error_reasons(run_id)
    return {**timing, "episodes": len(episodes), "done": sum(e.status == "done" for e in episodes), "turns": turns,
            "tool_calls": calls, "tool_errors": errors,
            "reward_mean": statistics.fmean(r.reward for r in rewards.values()) if rewards else None,
            "evaluations": len(clock.cpu_s), "evaluation_cpu_s": sum(clock.cpu_s), "evaluation_wall_s": sum(clock.wall_s),
            "errored": summary.errors, "first_error": reasons[0][0] if reasons else None}


def summarise_runs(rounds: list[dict]) -> dict:
    """Medians over the rounds of the per-round rates and costs."""
    def med(f) -> float:
        return statistics.median(f(r) for r in rounds)

    return {
        "episodes_per_s": med(lambda r: r["done"] / r["wall_s"]), "turns_per_s": med(lambda r: r["turns"] / r["wall_s"]),
        "cpu_ms_per_turn": med(lambda r: 1000 * r["cpu_s"] / max(r["turns"], 1)),
        "cpu_ms_per_episode": med(lambda r: 1000 * r["cpu_s"] / max(r["done"], 1)),
        "evaluation_cpu_ms": med(lambda r: 1000 * r["evaluation_cpu_s"] / max(r["evaluations"], 1)),
        "evaluation_wall_ms": med(lambda r: 1000 * r["evaluation_wall_s"] / max(r["evaluations"], 1)),
        "evaluation_cpu_share": med(lambda r: r["evaluation_cpu_s"] / r["cpu_s"]),
        "server_cpu_share": med(lambda r: r["server_cpu_s"] / r["wall_s"]),
        "turns_per_episode": med(lambda r: r["turns"] / max(r["episodes"], 1)),
        "tool_calls_per_episode": med(lambda r: r["tool_calls"] / max(r["episodes"], 1)),
        "tool_errors_per_episode": med(lambda r: r["tool_errors"] / max(r["episodes"], 1)),
        "reward_mean": rounds[-1]["reward_mean"], "errored": sum(r["errored"] for r in rounds),
        "first_error": next((r["first_error"] for r in rounds if r["first_error"]), None), "rounds": rounds,
    }


def play_script(environment, script: list[list[dict]]) -> None:
    """Every call of the script on `environment`, as the episode's tool desk makes them."""
    from tau2.data_model.message import ToolCall

    for i, call in enumerate(c for step in script for c in step):
        environment.get_response(ToolCall(id=f"b{i}", name=call["name"], arguments=call["arguments"], requestor="assistant"))


def timed_each(work: dict[str, object], repetitions: int) -> dict[str, dict]:
    """Each callable of `work` `repetitions` times, in alternating order: median and mean wall and CPU ms per call."""
    wall: dict[str, list[float]] = {n: [] for n in work}
    cpu: dict[str, list[float]] = {n: [] for n in work}
    names = list(work)
    for i in range(repetitions):
        for name in names if i % 2 == 0 else names[::-1]:
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            work[name]()
            wall[name].append(1000 * (time.perf_counter() - t0))
            cpu[name].append(1000 * (time.process_time() - c0))
    return {n: {"wall_ms_median": statistics.median(wall[n]), "wall_ms_mean": statistics.fmean(wall[n]),
                "cpu_ms_median": statistics.median(cpu[n]), "cpu_ms_mean": statistics.fmean(cpu[n])} for n in names}


def environment_costs(d: Tau2Domain, script: list[list[dict]], store: Store, run_id: str, repetitions: int) -> dict:
    """(a) the testbed's environment against (b) a freshly parsed one, each with the script's calls; then τ²'s evaluator
    on one stored episode through the testbed's registered environment and through τ²'s own."""
    from tau2.domains.airline.environment import get_environment

    from testbed.loop.orchestrator import TerminationReason

    envs = timed_each({"testbed environment": d.new_environment, "fresh τ² environment": get_environment,
                       "testbed environment + calls": lambda: play_script(d.new_environment(), script),
                       "fresh τ² environment + calls": lambda: play_script(get_environment(), script)}, repetitions)
    episode = next(e for e in store.episodes(run_id) if e.status == "done")
    messages, task = store.messages(run_id, episode.episode_id), d.tasks[episode.key.item_id]
    termination = TerminationReason(episode.termination)
    tau2_own = dataclasses.replace(d, evaluation_name="airline")
    evals = timed_each({"evaluation, testbed's environments": lambda: evaluate(d, task, messages, termination),
                        "evaluation, τ²'s own environments": lambda: evaluate(tau2_own, task, messages, termination)}, repetitions)
    return {"environments": envs, "evaluation": evals,
            "environment_ratio": envs["fresh τ² environment"]["wall_ms_median"] / envs["testbed environment"]["wall_ms_median"],
            "with_calls_ratio": envs["fresh τ² environment + calls"]["wall_ms_median"]
            / envs["testbed environment + calls"]["wall_ms_median"],
            "evaluation_ratio": evals["evaluation, τ²'s own environments"]["wall_ms_median"]
            / evals["evaluation, testbed's environments"]["wall_ms_median"]}


def peak_rss_mib() -> float:
    """This process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def table(runs: dict, envs: dict, rss: dict, args: argparse.Namespace, episodes: int) -> str:
    """The plain-text report."""
    r = runs
    out = [f"τ² airline on the mock server: {episodes} episodes per round, concurrency {args.concurrency}, "
           f"latency {args.latency_ms:g} ms, "
           f"user stops on turn {args.user_turns}; median of {args.rounds} round(s)",
           f"  episodes/s {r['episodes_per_s']:.1f}   turns/s {r['turns_per_s']:.1f}   ({r['turns_per_episode']:.1f} turns, "
           f"{r['tool_calls_per_episode']:.1f} tool calls, {r['tool_errors_per_episode']:.1f} tool errors per episode; reward mean "
           f"{r['reward_mean'] if r['reward_mean'] is None else round(r['reward_mean'], 3)})",
           f"  client CPU {r['cpu_ms_per_turn']:.2f} ms/turn, {r['cpu_ms_per_episode']:.1f} ms/episode; of which τ² evaluation "
           f"{r['evaluation_cpu_ms']:.1f} CPU ms ({r['evaluation_wall_ms']:.1f} wall ms) per episode, "
           f"{100 * r['evaluation_cpu_share']:.0f}% of the client's CPU; server CPU {100 * r['server_cpu_share']:.0f}%",
           f"  peak RSS: {rss['after_load']:.0f} MiB after loading the domain, {rss['after_runs']:.0f} MiB after the runs, "
           f"{rss['after_comparison']:.0f} MiB after the comparison",
           f"  {'per episode, ' + str(args.env_episodes) + ' each':<40} {'wall ms (median)':>17} {'CPU ms (median)':>16} "
           f"{'wall ms (mean)':>15}"]
    for part in ("environments", "evaluation"):
        for name, row in envs[part].items():
            out.append(f"  {name:<40} {row['wall_ms_median']:>17.1f} {row['cpu_ms_median']:>16.1f} {row['wall_ms_mean']:>15.1f}")
    out.append(f"  fresh parse ÷ testbed environment: {envs['environment_ratio']:.0f}x built, "
               f"{envs['with_calls_ratio']:.1f}x with the script's calls; τ²'s own ÷ testbed's environments in evaluation: {envs['evaluation_ratio']:.1f}x")
    if r["errored"]:
        out.append(f"  {r['errored']} episode(s) errored, first: {(r['first_error'] or '')[:160]}")
    return "\n".join(out)


async def bench(args: argparse.Namespace, server_cores: set[int], folder: Path) -> tuple[dict, dict, dict, int]:
    """Load the domain, start the mock, warm up, run the rounds, then compare environments; the results."""
    d = domain("airline")
    rss = {"after_load": peak_rss_mib()}
    script = airline_script(d)
    with scripted_mock(args.latency_ms, script, server_cores, folder) as (base_url, pid):
        warm = write_spec(folder, "tau2-warm", base_url, 2, args)
        scenario = write_spec(folder, "tau2-bench", base_url, args.episodes, args)
        store = Store(folder / "store.sqlite")
        try:
            await one_run(warm, store, "warm", pid)
            rounds = []
            for i in range(args.rounds):
                got = await one_run(scenario, store, f"round-{i}", pid)
                rounds.append(got)
                print(f"  round {i + 1}: {got['done'] / got['wall_s']:.1f} episodes/s, "
                      f"{1000 * got['cpu_s'] / max(got['turns'], 1):.2f} CPU ms/turn, evaluation "
                      f"{1000 * got['evaluation_cpu_s'] / max(got['evaluations'], 1):.1f} CPU ms/episode", flush=True)
            rss["after_runs"] = peak_rss_mib()
            envs = environment_costs(d, script, store, f"round-{args.rounds - 1}", args.env_episodes)
            rss["after_comparison"] = peak_rss_mib()
        finally:
            store.close()
    return summarise_runs(rounds), envs, rss, rounds[0]["episodes"]


def main() -> None:
    """Parse arguments, pin the client, run, print the report (and write JSON when asked)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=50, help="episodes per round (the base split's 50 tasks, trials past 50)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds; medians are reported")
    p.add_argument("--concurrency", type=int, default=16, help="the agent's concurrency: episodes in flight at once")
    p.add_argument("--latency-ms", type=float, default=0.0, help="the mock server's latency per reply")
    p.add_argument("--user-turns", type=int, default=4, help="the user's turns, its stop turn included (4 use the whole script)")
    p.add_argument("--env-episodes", type=int, default=10, help="repetitions of each row of the environment comparison")
    p.add_argument("--client-core", type=int, default=0, help="the one core the client runs on (the server gets the rest)")
    p.add_argument("--json", type=Path, help="also write the full results (every round) here")
    args = p.parse_args()
    if args.episodes < 1 or args.rounds < 1 or args.env_episodes < 1 or args.user_turns < 2:
        p.error("--episodes, --rounds and --env-episodes are at least 1, --user-turns at least 2")
    server_cores = pin_client(p, args.client_core)
    facts = machine(args.client_core, server_cores)
    print(f"client on core {args.client_core}, mock server on cores {sorted(server_cores)} of {facts['cpus_online']}; "
          f"python {facts['python']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-tau2-") as tmp:
        runs, envs, rss, episodes = asyncio.run(bench(args, server_cores, Path(tmp)))
    print(table(runs, envs, rss, args, episodes))
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        report = {"machine": facts, "settings": settings, "runs": runs, "comparison": envs, "peak_rss_mib": rss}
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
