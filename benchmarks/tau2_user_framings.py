"""Which τ² user framing can a small model play? Every framing × user model on τ² domains, one fixed assistant.

Each domain × user model is one τ² scenario (written under `--work`) with every framing of `--modes` as its user
modes (testbed.scenarios.tau2.user_framings: τ²'s `instructed`, `raw`, `transcript`, `oneshot`), run (or resumed)
by `run_scenario` into `--store` with the agents' managed servers; the assistant is the same in every run
(default Qwen2.5-Coder-0.5B with tool calling). Per domain × user model × framing it reports:

- **as agent**: the share of generated user turns that speak as the agent. The detector (AGENT_VOICE) flags a
  turn that offers help the way a service agent does ("how can I help/assist", "anything else I can…", "happy to
  help", "I'm here to help", "thank you for contacting"). Its limits: it misses a user that plays the agent without offering help
  (reports work it never did, asks the agent for the customer's details), and would flag a customer who offers
  the agent help in those words.
- **stated**: the share of tasks (episodes) whose request the user ever states: some user turn holds at least three,
  and at least a quarter, of the distinctive words of the task's reason for the call (REQUEST_WORDS: words of four
  letters or more, or with a digit, less common and persona words, compared on their first five letters). Its
  limits: a paraphrase in other words is missed; a user echoing an agent that already named the request counts.
- **reward**: τ²'s reward averaged with errored episodes as 0 (the report's default), its 95 % interval, and the
  share of episodes that ended on the user's stop (`user_stop`).
- **calls/ep**: the assistant's tool calls per episode; **user turns/ep**; **s/ep**: model seconds per episode
  (the latencies of its generated messages, queueing on the shared server included) and the run's wall seconds
  over its episodes, every framing's together (episodes run concurrently, so this is the throughput figure).

    flock /work/scratch/s42/vllm.lock .venv/bin/python benchmarks/tau2_user_framings.py \\
        --users agents/qwen2.5-coder-0.5b.yaml,agents/qwen2.5-coder-1.5b.yaml --tasks mock=all --tasks airline=3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
from datetime import datetime
from pathlib import Path

from tau2_bench_specs import REPO, write_tau2_scenario

from testbed.analysis.tau2.metrics import counted_rewards, reward_interval
from testbed.running.runner import default_run_id, run_scenario
from testbed.scenarios.tau2.domains import domain
from testbed.store import Store
from testbed.store.frames import episodes_df, messages_df

MODES = ("instructed", "raw", "transcript", "oneshot")
AGENT_VOICE = re.compile(
    r"\bhow (?:can|may|could) i (?:help|assist|be of)|\bwhat can i (?:do|help)|\banything else i can\b"
    r"|\b(?:happy|glad) to (?:help|assist)\b|\bthank you for (?:contacting|reaching out|calling|choosing)\b"
    r"|\blet me (?:help|assist) you\b|\bi can (?:help|assist) you\b|\bhere to (?:help|assist)\b"
    r"|\bi'?m (?:a|an|your) (?:chatbot|assistant|ai)\b", re.IGNORECASE)
"""A user turn that offers help the way a service agent does: the user speaking as the agent."""
COMMON = frozenset(
    "about after also because been before being both could does doing each from have having here into just know like "
    "make many more most much must need needs only other over really same should some such than that their them then "
    "there these they this those through time very want wants were what when where which while will with would your "
    "yours yourself help assist goal call calling contact contacting agent customer service representative member team person "
    "previous discussion conversation continue currently".split())
"""Words that say nothing about a task's request (persona and framing words, common words)."""


def request_words(reason: str) -> set[str]:
    """The distinctive words of a reason for the call, each as its first five letters (a light stem)."""
    words = re.findall(r"[a-z0-9_]+", reason.lower())
    return {w[:5] for w in words if (len(w) >= 4 or any(c.isdigit() for c in w)) and w not in COMMON}


def states_request(turn: str, wanted: set[str]) -> bool:
    """Whether a user turn states the request: it holds at least three (all, where there are fewer), and a quarter, of
    the request's words."""
    if not wanted:
        return False
    said = {w[:5] for w in re.findall(r"[a-z0-9_]+", turn.lower())}
    hits = len(said & wanted)
    return hits >= min(3, len(wanted)) and hits >= math.ceil(len(wanted) / 4)


def speaks_as_agent(turn: str) -> bool:
    """Whether a user turn offers help as a service agent does (AGENT_VOICE)."""
    return bool(AGENT_VOICE.search(turn))


def reason_for_call(task) -> str:
    """The task's reason for the call, or its whole instructions where they are one text."""
    instructions = task.user_scenario.instructions
    return instructions if isinstance(instructions, str) else str(instructions.reason_for_call or instructions)


def run_wall_s(store: Store, run_id: str) -> float:
    """The run's wall seconds as the store has them: from its start to its last finish (a resumed run's gaps in)."""
    run = next(r for r in store.runs() if r["run_id"] == run_id)
    if not run["finished_at"]:
        return math.nan
    return (datetime.fromisoformat(run["finished_at"]) - datetime.fromisoformat(run["started_at"])).total_seconds()


def framing_rows(store: Store, run_id: str, domain_name: str, user_label: str) -> list[dict]:
    """The measures of one run, one row per framing."""
    episodes, messages = episodes_df(store, run_id, exact=True), messages_df(store, run_id, exact=True)
    tasks = domain(domain_name).tasks
    rows, per_episode_wall = [], run_wall_s(store, run_id) / max(1, len(episodes))
    for mode, eps in episodes.groupby("user_mode"):
        ids = set(eps.episode_id)
        own = messages[messages.episode_id.isin(ids)]
        users = own[own.generated_user_turn & (own.role == "user")]
        stated = sum(any(states_request(t, request_words(reason_for_call(tasks[item])))
                         for t in users[users.episode_id == eid].content)
                     for eid, item in zip(eps.episode_id, eps.item_id))
        calls = sum(len(json.loads(j)) for j in own[(own.role == "assistant") & own.tool_calls_json.notna()].tool_calls_json)
        counted = counted_rewards(eps)
        lo, hi, _ = reward_interval(list(counted.task_score))
        rows.append({"domain": domain_name, "user": user_label, "framing": mode, "episodes": len(eps),
                     "errored": int((eps.status == "error").sum()),
                     "as_agent": float(users.content.map(speaks_as_agent).mean()) if len(users) else math.nan,
                     "stated": stated / len(eps), "reward": float(counted.task_score.mean()) if len(counted) else math.nan,
                     "reward_lo": lo, "reward_hi": hi, "user_stop": float((eps.termination == "user_stop").mean()),
                     "calls_per_ep": calls / len(eps), "user_turns_per_ep": len(users) / len(eps),
                     "model_s_per_ep": float(eps.latency_s.mean()), "wall_s_per_ep": per_episode_wall})
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    head = ("| domain | user | framing | eps | as agent | stated | reward (95 % CI) | user stop | calls/ep | user turns/ep "
            "| model s/ep | wall s/ep | errored |\n|" + "---|" * 13)
    lines = [f"| {r['domain']} | {r['user']} | {r['framing']} | {r['episodes']} | {r['as_agent']:.0%} | {r['stated']:.0%} "
             f"| {r['reward']:.2f} ({r['reward_lo']:.2f}–{r['reward_hi']:.2f}) | {r['user_stop']:.0%} "
             f"| {r['calls_per_ep']:.1f} | {r['user_turns_per_ep']:.1f} | {r['model_s_per_ep']:.0f} | {r['wall_s_per_ep']:.0f} "
             f"| {r['errored']} |"
             for r in rows]
    return "\n".join([head, *lines])


async def measure(args: argparse.Namespace) -> list[dict]:
    """Every domain × user model run (resumed where the store has it; with `--report-only` only read), then their rows."""
    store, rows = Store(args.store), []
    for domain_name, limit in args.tasks:
        for user in args.users:
            scenario = write_tau2_scenario(args.work, f"framings-{domain_name}-{user.stem}", assistant=args.assistant, user=user,
                                           domain=domain_name, limit=limit, user_modes=tuple(args.modes),
                                           max_tokens=args.max_tokens, max_steps=args.max_steps)
            if args.report_only:
                run_id = default_run_id(scenario, "native", store)
            else:
                run_id = (await run_scenario(scenario, store, show_progress=True)).run_id
            rows += framing_rows(store, run_id, domain_name, user.stem)
            print(table(rows), flush=True)
    return rows


def task_limit(text: str) -> tuple[str, int | None]:
    """`domain=N` or `domain=all` as (domain, limit)."""
    name, _, count = text.partition("=")
    return name, None if count in ("", "all") else int(count)


def main() -> None:
    """Run the grid and print the table (and write the rows as JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assistant", type=Path, default=REPO / "agents/qwen2.5-coder-0.5b.yaml")
    parser.add_argument("--users", default="agents/qwen2.5-coder-0.5b.yaml,agents/qwen2.5-coder-1.5b.yaml",
                        help="agent spec files of the user models, comma-separated")
    parser.add_argument("--tasks", type=task_limit, action="append", help="DOMAIN=N or DOMAIN=all (repeatable)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--max-steps", type=int, default=24)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--store", type=Path, default=Path(".testbed/user-framings.sqlite"))
    parser.add_argument("--work", type=Path, default=Path(".testbed/user-framings"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--report-only", action="store_true", help="measure the stored runs again, run nothing")
    args = parser.parse_args()
    args.users = [Path(u) for u in args.users.split(",")]
    args.modes = args.modes.split(",")
    args.tasks = args.tasks or [("mock", None), ("airline", 3)]
    args.store.parent.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    rows = asyncio.run(measure(args))
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
