"""Which small open model can be the τ² assistant on a CPU? Each model as the assistant on the same τ² tasks against
the same user, with the figures a reader needs to choose: calls per assistant turn, calls the server's parser
missed, tool errors, reward with its 95 % interval, and seconds per episode.

Each model runs as `testbed run` runs it (its managed vLLM server with the spec's tool-call parser, started and
stopped per model), on a scenario this script writes (benchmarks/tau2_bench_specs.py): the domain's tasks, `--trials`
trials, the assistant at `--temperature`, facing `--user` (default: the scripted τ² user, so the figures are the
assistant's alone). Runs resume: a second invocation with the same arguments and `--store` finishes what the first
left.

Figures per model:
- `turns`: the assistant's generated messages; `calls/turn`: tool calls per such message; `turns with calls`.
- `unread calls`: assistant text replies in which the testbed's tolerant reader (testbed/backends/tool_call_text.py)
  still finds a call: calls the server's parser did not turn into tool calls (with `tolerant` on the server these
  are what even it refused, e.g. arguments over the bounds).
- `tool errors`: τ²'s error results to the assistant's calls (unknown tool, bad arguments).
- `reward` with its 95 % interval (Wilson on successes), errored episodes counted 0; `errored`.
- `s/episode`: mean model time per episode (the episode's summed request latency) and the run's wall time per
  episode at the agent's concurrency (the managed server's start included: about a minute on 2 cores).

    .venv/bin/python benchmarks/tau2_cpu_models.py agents/smollm2-tools.yaml agents/qwen2.5-coder-0.5b.yaml
    .venv/bin/python benchmarks/tau2_cpu_models.py agents/qwen2.5-coder-1.5b.yaml --trials 2 --temperature 0.7 --json t.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from tau2_bench_specs import REPO, write_tau2_scenario

from testbed.analysis.tau2.metrics import counted_rewards, reward_interval
from testbed.backends.tool_call_text import read_tool_calls
from testbed.running.runner import run_scenario
from testbed.store import Store
from testbed.store.frames import episodes_df

SCRIPTED_USER = REPO / "agents" / "tau2-scripted-user.yaml"


def assistant_figures(store: Store, run_id: str) -> dict:
    """Tool use of the run's assistant turns: turns, calls, turns with calls, unread calls, tool errors."""
    turns = calls = with_calls = unread = errors = 0
    for _, messages in store.iter_messages(run_id, include_errored=True):
        for m in messages:
            if m.role == "assistant" and m.sampling is not None:
                turns += 1
                calls += len(m.tool_calls)
                with_calls += bool(m.tool_calls)
                if not m.tool_calls and read_tool_calls(m.content).calls:
                    unread += 1
            elif m.tool_result is not None and m.tool_result.error and m.tool_result.requestor == "assistant":
                errors += 1
    return {"turns": turns, "calls": calls, "calls_per_turn": calls / turns if turns else None,
            "turns_with_calls": with_calls, "unread_calls": unread, "tool_errors": errors}


def outcome_figures(store: Store, run_id: str) -> dict:
    """Reward (errored as 0) with its interval, errored episodes and mean model seconds per episode."""
    episodes = episodes_df(store, run_id, exact=True)
    rewards = [float(r) for r in counted_rewards(episodes).task_score]
    lo, hi, kind = reward_interval(rewards)
    return {"episodes": len(episodes), "errored": int((episodes.status == "error").sum()),
            "reward": sum(rewards) / len(rewards) if rewards else None, "reward_lo": lo, "reward_hi": hi,
            "interval": kind, "model_s_per_episode": float(episodes.latency_s.mean()) if len(episodes) else None}


async def one_model(agent: Path, args: argparse.Namespace, store: Store, folder: Path) -> dict:
    """Run one assistant model on the scenario and gather its figures."""
    scenario = write_tau2_scenario(folder / agent.stem, f"cpu-models-{agent.stem}", assistant=agent, user=args.user,
                                   domain=args.domain, limit=args.limit, trials=args.trials,
                                   assistant_temperature=args.temperature, max_steps=args.max_steps)
    started = time.perf_counter()
    summary = await run_scenario(scenario, store, show_progress=True)
    wall = time.perf_counter() - started
    row = {"assistant": agent.stem, "user": args.user.stem, "run_id": summary.run_id, "wall_s": round(wall, 1),
           **assistant_figures(store, summary.run_id), **outcome_figures(store, summary.run_id)}
    row["wall_s_per_episode"] = wall / row["episodes"] if row["episodes"] else None
    return row


def table(rows: list[dict]) -> str:
    """The rows as the README's markdown table."""
    head = ("| assistant | episodes | calls / turn | turns with calls | unread calls | tool errors | reward (95 % CI) "
            "| errored | model s / episode | wall s / episode |\n|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r['assistant']} | {r['episodes']} | {r['calls_per_turn'] or 0:.2f} | "
                     f"{r['turns_with_calls']}/{r['turns']} | {r['unread_calls']} | {r['tool_errors']} | "
                     f"{r['reward'] or 0:.2f} ({r['reward_lo']:.2f}–{r['reward_hi']:.2f}) | {r['errored']} | "
                     f"{r['model_s_per_episode'] or 0:.1f} | {r['wall_s_per_episode'] or 0:.1f} |")
    return "\n".join(lines)


def main() -> None:
    """Run every named assistant in turn and print (and with --json write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", type=Path, nargs="+", help="assistant agent specs (tool calling on)")
    parser.add_argument("--user", type=Path, default=SCRIPTED_USER, help="the user's agent spec (default: scripted)")
    parser.add_argument("--domain", default="mock")
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks (default: all)")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=None, help="the assistant's temperature (default: its spec's)")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--store", type=Path, default=Path(".testbed/cpu-models.sqlite"))
    parser.add_argument("--folder", type=Path, default=Path(".testbed/cpu-models"), help="where the scenarios are written")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.store.parent.mkdir(parents=True, exist_ok=True)
    store = Store(args.store)
    rows = []
    for agent in args.agents:
        rows.append(asyncio.run(one_model(agent, args, store, args.folder)))
        print(json.dumps(rows[-1], indent=2), flush=True)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
