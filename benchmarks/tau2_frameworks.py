"""What a τ² airline episode costs the client under each framework: native, AutoGen, LangGraph, CAMEL and τ²'s own orchestrator.

Every framework runs the same τ² airline tasks against the same mock OpenAI server with the same
scripted tool calls (benchmarks/tau2_episodes.py builds the script from the installed package at
run time, the spec, and the timed run), each in a process of its own so that its peak RSS is its
own: `--episodes` episodes after an untimed warm-up of two, `--rounds` timed rounds, medians
reported, the client pinned to one core and the mock on the others. A framework runs as
`testbed run --framework X` runs it: the ones with their own model client send through the
testbed's wire recorder (`--no-wire` turns that off for all of them, native included, to price the
recorder).

Figures per framework: episodes/s; client CPU ms per generated turn, with τ²'s evaluator (the same
for every framework, run once per episode) and the tool calls, and how many times less that is than
τ²'s own orchestrator's (the bar: native at least 10x); the same without the evaluator; turns per second of client CPU without
the evaluator, and that rate as a multiple of τ²'s own orchestrator's; `loop ms`, the CPU per turn
left when the episodes' tool calls in τ²'s environment are taken out too (the same calls, on the
same environment, for every framework: what is left is the loop's own cost), and its multiple of
τ²'s; tool calls, tool errors and turns per episode (the same script
should give the same shape); reward mean; peak RSS; errored episodes.

    .venv/bin/python benchmarks/tau2_frameworks.py
    .venv/bin/python benchmarks/tau2_frameworks.py --frameworks native,tau2 --episodes 10 --rounds 1
    .venv/bin/python benchmarks/tau2_frameworks.py --frameworks native,tau2 --episodes 100 --concurrency 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from frameworks import machine, pin_client
from tau2_episodes import EVALUATING, airline_script, one_run, peak_rss_mib, scripted_mock, summarise_runs, write_spec

from testbed.scenarios.tau2.domains import domain
from testbed.store import Store

FRAMEWORKS = ("native", "autogen", "langgraph", "camel", "tau2")
REFERENCE = "tau2"
"""The framework every other one's CPU rate is a multiple of: τ²'s own orchestrator."""


class EnvironmentClock:
    """τ²'s `Environment.get_response` bound to a wrapper that times each tool call's CPU in its thread (the calls the
    evaluator replays left out: they are the evaluator's), while entered."""

    def __init__(self) -> None:
        from tau2.environment.environment import Environment

        self.owner, self.original, self.cpu_s, self._lock = Environment, Environment.get_response, 0.0, threading.Lock()

    def __enter__(self) -> "EnvironmentClock":
        original, clock = self.original, self

        def timed(environment, call):
            if getattr(EVALUATING, "active", False):
                return original(environment, call)
            c0 = time.thread_time()
            try:
                return original(environment, call)
            finally:
                with clock._lock:
                    clock.cpu_s += time.thread_time() - c0

        self.owner.get_response = timed
        return self

    def __exit__(self, *exc: object) -> None:
        self.owner.get_response = self.original


async def child(args: argparse.Namespace, server_cores: set[int], folder: Path) -> dict:
    """One framework's rounds in this process: the summary of its runs (each round's CPU in the episodes' tool calls
    as `environment_cpu_s`) and its peak RSS."""
    script = airline_script(domain("airline"))
    with scripted_mock(args.latency_ms, script, server_cores, folder) as (base_url, pid):
        warm = write_spec(folder, "tau2-warm", base_url, 2, args)
        scenario = write_spec(folder, "tau2-bench", base_url, args.episodes, args)
        store = Store(folder / "store.sqlite")
        try:
            await one_run(warm, store, "warm", pid, args.child, wire=args.wire)
            rounds = []
            for i in range(args.rounds):
                with EnvironmentClock() as clock:
                    got = await one_run(scenario, store, f"round-{i}", pid, args.child, wire=args.wire)
                rounds.append({**got, "environment_cpu_s": clock.cpu_s})
        finally:
            store.close()
    return {**summarise_runs(rounds), "peak_rss_mib": peak_rss_mib()}


def loop_rate(row: dict, environment: bool = True) -> float:
    """Generated turns per second of client CPU, τ²'s evaluator left out (and, unless `environment`, the episodes' tool
    calls in τ²'s environment, the same calls for every framework)."""
    loop_cpu_s = sum(r["cpu_s"] - r["evaluation_cpu_s"] - (0 if environment else r["environment_cpu_s"]) for r in row["rounds"])
    return sum(r["turns"] for r in row["rounds"]) / max(loop_cpu_s, 1e-9)


def run_child(name: str, args: argparse.Namespace, folder: Path) -> dict:
    """The framework's rounds in a child process; its summary, or the failure it printed."""
    out = folder / f"{name}.json"
    cmd = [sys.executable, __file__, "--child", name, "--json", str(out), "--episodes", str(args.episodes), "--rounds", str(args.rounds),
           "--concurrency", str(args.concurrency), "--latency-ms", str(args.latency_ms), "--user-turns", str(args.user_turns),
           "--client-core", str(args.client_core)] + ([] if args.wire is None else ["--wire" if args.wire else "--no-wire"])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        return {"failed": (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]}
    return json.loads(out.read_text())


def table(rows: dict[str, dict], args: argparse.Namespace) -> str:
    """The plain-text report, one row per framework."""
    reference = rows.get(REFERENCE, {})
    ref_rate = loop_rate(reference) if "rounds" in reference else None
    ref_loop = loop_rate(reference, environment=False) if "rounds" in reference else None
    out = [f"τ² airline on the mock server: {args.episodes} episodes per round, concurrency {args.concurrency}, latency "
           f"{args.latency_ms:g} ms, user stops on turn {args.user_turns}, wire recorder {'as testbed run keeps it' if args.wire is None else ('on' if args.wire else 'off')}; "
           f"median of {args.rounds} round(s)",
           f"  {'framework':<10} {'ep/s':>6} {'CPU ms/turn':>12} {'vs tau2':>8} {'w/o eval':>9} {'turns/CPU s':>12} "
           f"{'vs tau2':>8} {'loop ms':>8} {'vs tau2':>8} "
           f"{'turns':>6} {'calls':>6} {'errors':>7} {'reward':>7} {'RSS MiB':>8} {'errored':>8}"]
    for name, r in rows.items():
        if "failed" in r:
            out.append(f"  {name:<10} failed: {r['failed'][0][:140]}")
            continue
        rate = loop_rate(r)
        without = 1000 / rate
        times = f"{rate / ref_rate:.1f}x" if ref_rate else "-"
        loop = loop_rate(r, environment=False)
        loop_times = f"{loop / ref_loop:.1f}x" if ref_loop else "-"
        reward = "-" if r["reward_mean"] is None else f"{r['reward_mean']:.2f}"
        all_in = f"{reference['cpu_ms_per_turn'] / r['cpu_ms_per_turn']:.1f}x" if "rounds" in reference else "-"
        out.append(f"  {name:<10} {r['episodes_per_s']:>6.1f} {r['cpu_ms_per_turn']:>12.2f} {all_in:>8} {without:>9.2f} {rate:>12.0f} {times:>8} {1000 / loop:>8.2f} {loop_times:>8} "
                   f"{r['turns_per_episode']:>6.1f} {r['tool_calls_per_episode']:>6.1f} {r['tool_errors_per_episode']:>7.1f} "
                   f"{reward:>7} {r['peak_rss_mib']:>8.0f} {r['errored']:>8}")
        if r["first_error"]:
            out.append(f"  {'':<10} first error: {r['first_error'][:140]}")
    return "\n".join(out)


def main() -> None:
    """Parse arguments; as the parent run every framework's child and print the table; as a child run one framework."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated, in the order run")
    p.add_argument("--episodes", type=int, default=20, help="episodes per round (airline base split tasks)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds; medians are reported")
    p.add_argument("--concurrency", type=int, default=8, help="episodes in flight at once")
    p.add_argument("--latency-ms", type=float, default=0.0, help="the mock server's latency per reply")
    p.add_argument("--user-turns", type=int, default=4, help="the user's turns, its stop turn included")
    p.add_argument("--client-core", type=int, default=0, help="the one core the client runs on (the server gets the rest)")
    p.add_argument("--wire", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the wire log (default: as `testbed run` does, on for every framework but native)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    if args.episodes < 1 or args.rounds < 1 or args.user_turns < 2:
        p.error("--episodes and --rounds are at least 1, --user-turns at least 2")
    server_cores = pin_client(p, args.client_core)
    if args.child:
        with tempfile.TemporaryDirectory(prefix=f"bench-tau2-{args.child}-") as tmp:
            result = asyncio.run(child(args, server_cores, Path(tmp)))
        args.json.write_text(json.dumps(result))
        return
    facts = machine(args.client_core, server_cores)
    print(f"client on core {args.client_core}, mock server on cores {sorted(server_cores)} of {facts['cpus_online']}; "
          f"python {facts['python']}", flush=True)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tau2-frameworks-") as tmp:
        for name in [n.strip() for n in args.frameworks.split(",") if n.strip()]:
            rows[name] = run_child(name, args, Path(tmp))
            print(f"  {name}: {'failed' if 'failed' in rows[name] else 'done'}", flush=True)
    print(table(rows, args))
    if args.json:
        args.json.write_text(json.dumps({"machine": facts, "settings": {k: str(v) for k, v in vars(args).items()}, "frameworks": rows},
                                        indent=2, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
