"""What the testbed costs per turn on its real path, against a bare aiohttp loop, in one run.

The mock OpenAI server (benchmarks/mock_openai.py) runs as a subprocess on the cores the client
does not use; the client pins itself to one core. For each injected latency, alternating rounds
(bare, testbed, testbed, bare, ...) after an untimed warm-up of each:

- **bare**: a minimal aiohttp loop runs `--conversations` concurrent dialogues of 7 generated
  turns (assistant, user, ..., assistant), sending the very request bodies the testbed sends: the
  assistant's system prompt and the true-role dialogue; the persona prompt and the role-flipped
  dialogue for the simulated user; the same sampling and per-turn seeds. Each conversation keeps
  its two message lists and appends to them; nothing is stored. Its timed region is the session's
  whole life, as the testbed's is its backend's: open, GET /models, the dialogues, close. It is written as such a loop is
  usually written (`session.post(url, json=body)`, `await resp.json()`, the stdlib's json, one
  session without limits); the testbed sends orjson bytes to a pre-parsed URL, which is part of
  what is measured.
- **testbed**: `run_scenario` on a dialogue spec (gsm8k openings, instructed user, `max_user_turns`
  4, the agent's `concurrency` = `--conversations`, so every episode is in flight at once) with the
  native framework, a real SQLite store in a temporary folder (each round a new run id in the same
  store) and rich progress on, drawn to a terminal console that writes to /dev/null, as a user
  watching the run would have it. Two rows come from each such run: `testbed` is its episodes,
  the run's `execute_units` call (every conversation, every episode's store write and commit, the
  progress bar, the sink), which the targets are about; `testbed run` is the whole `run_scenario`
  call, which adds what a run costs once however long it is (the lease, the run record with its
  package versions and git revision, starting and closing the backend, the plan, ~70 ms at 1,000
  episodes) and so weighs more in a short benchmark run than in a study.
- **python agent**: the testbed's episodes again with the assistant a `backend: python` agent
  (benchmarks/hot_path_agent.py) that forwards each turn through the very backend the native
  assistant uses, so its excess over `testbed` is the callable path (testbed.backends.python_agent).

Figures per latency, medians over the rounds:

- **turns/s**: generated turns (model replies received; for the testbed, the assistant and
  simulated-user messages in the store) divided by the batch's wall time; `÷ bare` is the ratio.
- **CPU ms per turn**: the client process's CPU time over the batch (`time.process_time()`: user
  plus system time of every thread, so the event loop, SQLite, rich's refresh thread and garbage
  collection all count) divided by the batch's generated turns. The issue's 0.3 ms target is the
  testbed's figure; `above bare` is the testbed's minus the bare loop's, what the testbed adds to
  the HTTP client itself.
- **server CPU**: the mock server's CPU seconds over wall seconds (read from /proc in 10 ms ticks);
  near 100 % means the server, not the client, sets the rate.

Before every timed batch, of either client, the benchmark collects garbage and freezes what is left
(`gc.freeze()`), as a lean process would start: the ~200,000 objects its imports leave would
otherwise be walked by every full collection, at the cost of whichever client is running. The
testbed sets the collector for a run itself (testbed.running.runner.lean_collector); the bare loop keeps Python's.

Every conversation of a batch starts at once, so turns go in waves: a thousand requests, the
server's latency, a thousand replies for the client to handle. Neither side is busy all the time
(hence CPU shares well below 100 %), and a turn's wall time is the latency plus what client and
server spend on the wave, which is why client CPU shows in turns/s even at 100 ms.

The machine may be shared: only figures from one run, rounds alternated, are compared, and a
single round can be far off its neighbours; read the medians.

    .venv/bin/python benchmarks/hot_path.py
    .venv/bin/python benchmarks/hot_path.py --conversations 200 --rounds 3 --latency-ms 100
    .venv/bin/python benchmarks/hot_path.py --json /tmp/hot_path.json
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import sys
import tempfile
from pathlib import Path

import aiohttp
import yaml
from frameworks import Sample, machine, measured, mock_server, pin_client, sample_row, timed
from rich.console import Console

from testbed.backends.base import describe
from testbed.running.runner import plan, run_scenario
from testbed.scenarios.dialogue import opening_transcript
from testbed.specs.loader import ResolvedScenario, load_scenario
from testbed.store import Store
from testbed.templates import fill_slots

REPO = Path(__file__).resolve().parent.parent
ASSISTANT_PROMPT = "You are a helpful assistant."
USER_TURNS = 4
"""User turns per dialogue, the opening included: 7 generated turns (assistant, user, ..., assistant)."""
GENERATED = 2 * USER_TURNS - 1
MAX_TOKENS = 64
TARGETS = {"100": 0.9, "0": 0.8}
"""The issue's targets: testbed ÷ bare turns/s at each latency (ms)."""
CPU_TARGET_MS = 0.3
BATCHES = ("bare", "testbed", "python agent")
"""What runs in a round, alternating in order; the testbed's batch gives two rows (its episodes, its whole run)."""
CLIENTS = ("bare", "testbed", "testbed run", "python agent")
"""`python agent`: the testbed's episodes with the assistant a `backend: python` agent (benchmarks/hot_path_agent.py)
forwarding each turn through the same backend the native assistant uses: its excess over `testbed` is the callable path."""


def write_specs(folder: Path, base_url: str, conversations: int) -> ResolvedScenario:
    """The mock agent and the dialogue scenario in `folder`, resolved as `testbed run` would."""
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "helper.md").write_text(ASSISTANT_PROMPT)
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    agent = {"name": "mock-agent", "backend": "vllm", "model": "mock", "base_url": base_url, "system_prompt_file": "prompts/helper.md",
             "sampling": {"temperature": 0.0, "max_tokens": MAX_TOKENS}, "concurrency": conversations}
    scenario = {"kind": "dialogue", "name": "hot-path", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": conversations},
                "assistant": "mock.yaml", "user": "mock.yaml", "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md",
                "temperatures": [0.7], "max_tokens": MAX_TOKENS, "max_user_turns": USER_TURNS, "token_budget": 100_000}
    (folder / "mock.yaml").write_text(yaml.safe_dump(agent))
    (folder / "hot-path.yaml").write_text(yaml.safe_dump(scenario))
    return load_scenario(folder / "hot-path.yaml")


def agent_scenario(folder: Path, base_url: str, conversations: int) -> ResolvedScenario:
    """The same dialogue with the assistant a Python agent (same system prompt, sampling and concurrency)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    agent = {"name": "mock-agent", "backend": "python", "callable": "hot_path_agent:ForwardingAgent",
             "options": {"base_url": base_url, "concurrency": conversations}, "system_prompt_file": "prompts/helper.md",
             "sampling": {"temperature": 0.0, "max_tokens": MAX_TOKENS}, "concurrency": conversations}
    (folder / "python-agent.yaml").write_text(yaml.safe_dump(agent))
    return load_scenario(folder / "hot-path.yaml", assistant=folder / "python-agent.yaml")


def bare_inputs(scenario: ResolvedScenario) -> list[tuple[list[dict], str, int]]:
    """Per planned episode: the opening messages (system prompt first), the filled persona prompt, the seed."""
    spec, out = scenario.spec, []
    for unit, variants in plan(scenario):
        prompt = fill_slots(scenario.user_prompt or "", {"persona": unit.persona, "goal": unit.goal, "end_marker": spec.end_marker})
        for v in variants:
            out.append((opening_transcript(scenario, unit.messages, unit.speaker).chat(), prompt, v.seed))
    return out


async def bare_batch(base_url: str, inputs: list[tuple[list[dict], str, int]], server_pid: int) -> Sample:
    """The testbed's requests from a minimal aiohttp loop: sequential within a conversation, concurrent across them."""
    url = f"{base_url}/chat/completions"

    async def one(session: aiohttp.ClientSession, opening: list[dict], persona: str, seed: int) -> tuple[int, str | None]:
        assistant_view = list(opening)
        user_view = [{"role": "system", "content": persona}]
        user_view += [{"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]} for m in opening[1:]]
        generated = 0
        try:
            for k in range(GENERATED):
                if k % 2 == 0:
                    body = {"model": "mock", "messages": assistant_view, "temperature": 0.0, "max_tokens": MAX_TOKENS, "top_p": 1.0}
                else:
                    body = {"model": "mock", "messages": user_view, "temperature": 0.7, "max_tokens": MAX_TOKENS, "top_p": 1.0,
                            "seed": seed + len(assistant_view)}
                async with session.post(url, json=body) as resp:
                    text = (await resp.json())["choices"][0]["message"]["content"]
                generated += 1
                role, flipped = ("assistant", "user") if k % 2 == 0 else ("user", "assistant")
                assistant_view.append({"role": role, "content": text})
                user_view.append({"role": flipped, "content": text})
        except Exception as exc:
            return generated, describe(exc)
        return generated, None

    outcomes: list[tuple[int, str | None]] = []

    async def run() -> tuple[int, None]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            async with session.get(f"{base_url}/models") as resp:
                await resp.read()
            outcomes.extend(await asyncio.gather(*(one(session, *i) for i in inputs)))
        return 0, None

    sample = await timed([run()], len(inputs) * GENERATED, server_pid)
    sample.turns = sum(n for n, _ in outcomes)
    sample.errors = [e for _, e in outcomes if e]
    return sample


async def testbed_batch(scenario: ResolvedScenario, store: Store, run_id: str, console: Console,
                        server_pid: int) -> tuple[Sample, Sample]:
    """One `run_scenario` of the dialogue spec under a fresh run id: (its episodes, the whole run), each timed;
    turns counted from the store after.

    The episodes are the run's `execute_units` call, timed by the run's `timing` hook, which is entered just
    around it, so the run's own code runs unchanged.
    """
    episodes, span = Sample(), {}

    async def run() -> tuple[int, str | None]:
        summary = await run_scenario(scenario, store, run_id=run_id, console=console, show_progress=True,
                                     timing=functools.partial(measured, server_pid, span))
        episodes.wall_s, episodes.cpu_s, episodes.server_cpu_s = span["wall_s"], span["cpu_s"], span["server_cpu_s"]
        reasons = store.error_reasons(run_id)
        return 0, (f"{summary.errors} episode(s) errored, first: {reasons[0][0]}" if summary.errors and reasons else None)

    planned = sum(len(v) for _, v in plan(scenario))
    whole = await timed([run()], planned * GENERATED, server_pid)
    whole.turns = episodes.turns = sum(1 for e in store.episodes(run_id) for m in store.messages(run_id, e.episode_id)
                                       if m.role != "system" and m.speaker != "dataset")
    episodes.expected, episodes.errors = whole.expected, whole.errors
    return episodes, whole


async def bench_latency(latency_ms: float, args: argparse.Namespace, server_cores: set[int], folder: Path) -> dict:
    """Warm-up, then alternating rounds of the bare loop and the testbed on one mock server; the medians."""
    samples: dict[str, list[Sample]] = {n: [] for n in CLIENTS}
    console = Console(file=open(os.devnull, "w"), force_terminal=True, width=120)
    with mock_server(latency_ms, args.reply_words, server_cores) as (base_url, pid):
        spec_dir = folder / f"{latency_ms:g}ms"
        spec_dir.mkdir()
        scenario = write_specs(spec_dir, base_url, args.conversations)
        with_agent = agent_scenario(spec_dir, base_url, args.conversations)
        inputs = bare_inputs(scenario)
        store = Store(spec_dir / "store.sqlite")
        try:
            async def bare(r) -> dict[str, Sample]:
                return {"bare": await bare_batch(base_url, inputs, pid)}

            async def testbed(r) -> dict[str, Sample]:
                episodes, whole = await testbed_batch(scenario, store, f"hot-path-{r}", console, pid)
                return {"testbed": episodes, "testbed run": whole}

            async def python_agent(r) -> dict[str, Sample]:
                from hot_path_agent import close_shared

                episodes, _ = await testbed_batch(with_agent, store, f"hot-path-agent-{r}", console, pid)
                await close_shared()
                return {"python agent": episodes}

            batches = {"bare": bare, "testbed": testbed, "python agent": python_agent}
            for name in BATCHES:
                for client, s in (await batches[name]("warm")).items():
                    if s.errors:
                        print(f"  warm-up {client}: {len(s.errors)} error(s), first: {s.errors[0][:200]}", flush=True)
            for r in range(args.rounds):
                order = BATCHES if r % 2 == 0 else BATCHES[::-1]
                line = []
                for name in order:
                    gc.collect()
                    gc.freeze()
                    for client, s in (await batches[name](r)).items():
                        samples[client].append(s)
                        line.append(f"{client} {s.turns / s.wall_s:.0f} turns/s, {1000 * s.cpu_s / max(s.turns, 1):.3f} CPU ms/turn")
                print(f"  {latency_ms:g} ms, round {r + 1}: " + "; ".join(line), flush=True)
        finally:
            store.close()
            console.file.close()
    return summarise(samples)


def summarise(samples: dict[str, list[Sample]]) -> dict:
    """Per client: median turns/s, CPU ms per turn, server CPU share, errors; then the testbed's ratio and excess over bare."""
    rows: dict[str, dict] = {}
    for name, got in samples.items():
        rows[name] = sample_row(got)
    bare = rows["bare"]
    for name in CLIENTS[1:]:
        rows[name]["turns_ratio"] = rows[name]["turns_per_s"] / bare["turns_per_s"]
        rows[name]["cpu_ms_above_bare"] = rows[name]["cpu_ms_per_turn"] - bare["cpu_ms_per_turn"]
    agent, native = rows["python agent"], rows["testbed"]
    agent["vs_native_turns"] = agent["turns_per_s"] / native["turns_per_s"]
    agent["cpu_ms_above_native"] = agent["cpu_ms_per_turn"] - native["cpu_ms_per_turn"]
    return rows


def table(latency: str, rows: dict, args: argparse.Namespace) -> str:
    """The plain-text table of one latency, with the targets' verdicts on the testbed's episodes."""
    out = [f"latency {latency} ms: {args.conversations} concurrent conversations x {GENERATED} turns, {args.reply_words}-word replies, "
           f"median of {args.rounds} round(s)",
           f"  {'client':<12} {'turns/s':>9} {'÷ bare':>7} {'CPU ms/turn':>12} {'above bare':>11} {'server CPU':>11}  notes"]
    for name, r in rows.items():
        notes = [] if r["turns"] == r["expected_turns"] else [f"turns {r['turns']}/{r['expected_turns']}"]
        if r["errors"]:
            notes.append(f"{r['errors']} error(s), first: {r['first_error'][:120]}")
        ratio = f"{r['turns_ratio']:>7.3f}" if "turns_ratio" in r else f"{'':>7}"
        above = f"{r['cpu_ms_above_bare']:>11.3f}" if "cpu_ms_above_bare" in r else f"{'':>11}"
        out.append(f"  {name:<12} {r['turns_per_s']:>9.1f} {ratio} {r['cpu_ms_per_turn']:>12.3f} {above} "
                   f"{100 * r['server_cpu_share']:>10.0f}%  {'; '.join(notes)}")
    t = rows["testbed"]
    target = TARGETS.get(latency)
    verdict = "" if target is None else f" (target ≥ {target}: {'ok' if t['turns_ratio'] >= target else 'BELOW TARGET'})"
    cpu_ok = "ok" if t["cpu_ms_per_turn"] <= CPU_TARGET_MS else "ABOVE TARGET"
    out.append(f"  testbed ÷ bare turns/s {t['turns_ratio']:.3f}{verdict}; testbed CPU {t['cpu_ms_per_turn']:.3f} ms/turn "
               f"(target ≤ {CPU_TARGET_MS}: {cpu_ok}); the whole run, fixed costs included: {rows['testbed run']['turns_ratio']:.3f}")
    a = rows["python agent"]
    out.append(f"  python agent ÷ native loop turns/s {a['vs_native_turns']:.3f}; the callable path adds "
               f"{a['cpu_ms_above_native']:.3f} CPU ms per turn (every turn counted, user turns included)")
    return "\n".join(out)


def main() -> None:
    """Parse arguments, pin the client, run every latency, print the tables and one JSON summary line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conversations", type=int, default=1000, help="concurrent conversations (episodes) per batch")
    p.add_argument("--latency-ms", default="100,0", type=lambda s: [float(x) for x in s.split(",") if x],
                   help="comma-separated server latencies, one mock server each")
    p.add_argument("--reply-words", type=int, default=20, help="words per mock reply")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds of each client; medians are reported")
    p.add_argument("--client-core", type=int, default=0, help="the one core the client runs on (the server gets the rest)")
    p.add_argument("--json", type=Path, help="also write the full results (every round) here")
    args = p.parse_args()
    if args.conversations > 1319:
        p.error("--conversations is at most 1319 (one gsm8k opening each)")
    server_cores = pin_client(p, args.client_core)
    facts = machine(args.client_core, server_cores)
    print(f"client on core {args.client_core}, mock server on cores {sorted(server_cores)} of {facts['cpus_online']}; "
          f"python {facts['python']}; aiohttp {facts['packages'].get('aiohttp', '-')}", flush=True)
    if server_cores == {args.client_core}:
        print("note: one core only, the server shares the client's core", flush=True)

    async def run_all(folder: Path) -> dict[str, dict]:
        return {f"{lat:g}": await bench_latency(lat, args, server_cores, folder) for lat in args.latency_ms}

    with tempfile.TemporaryDirectory(prefix="bench-hot-path-") as tmp:
        results = asyncio.run(run_all(Path(tmp)))
    for lat, rows in results.items():
        print(table(lat, rows, args))
    summary = {lat: {"bare_turns_per_s": round(r["bare"]["turns_per_s"], 1), "bare_cpu_ms_per_turn": round(r["bare"]["cpu_ms_per_turn"], 4),
                     "bare_server_cpu": round(r["bare"]["server_cpu_share"], 3),
                     **{f"{key}_{field}": round(r[name][source], digits) for name, key in (("testbed", "testbed"), ("testbed run", "run"))
                        for field, source, digits in (("turns_per_s", "turns_per_s", 1), ("ratio", "turns_ratio", 3),
                                                      ("cpu_ms_per_turn", "cpu_ms_per_turn", 4), ("cpu_ms_above_bare", "cpu_ms_above_bare", 4),
                                                      ("server_cpu", "server_cpu_share", 3))},
                     "agent_vs_native_turns": round(r["python agent"]["vs_native_turns"], 3),
                     "agent_cpu_ms_above_native": round(r["python agent"]["cpu_ms_above_native"], 4),
                     "errors": r["bare"]["errors"] + r["testbed"]["errors"] + r["python agent"]["errors"]}
               for lat, r in results.items()}
    print(json.dumps({"hot_path": summary, "conversations": args.conversations, "rounds": args.rounds}))
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"machine": facts, "settings": settings, "latencies": results, "summary": summary}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
