"""What each agent framework costs per conversation turn, against a bare aiohttp loop.

The mock OpenAI server (benchmarks/mock_openai.py) runs as a subprocess on the cores the client
does not use; the client pins itself to one core. For each injected latency, each framework runs
`--conversations` concurrent dialogues of `--user-turns` user turns (2N-1 generated turns each:
assistant, user, ..., assistant) through `framework(name).converse(...)` with the testbed's own
OpenAICompatibleBackend, no wire recorder. The bare loop sends the same requests with one shared
aiohttp session. Every round runs all of them in alternating order after an untimed warm-up;
medians of turns/s and client CPU ms per turn are reported, with the server's CPU use beside them
(near 100 % means the mock, not the client, limits the rate; it is read from /proc in 10 ms ticks,
so it means little on a batch shorter than a second). Episodes are not retried (max_retries=0):
an error shows in the row.

    .venv/bin/python benchmarks/frameworks.py
    .venv/bin/python benchmarks/frameworks.py --conversations 20 --rounds 1 --latency-ms 0,100
    .venv/bin/python benchmarks/frameworks.py --frameworks native --latency-ms 100 --json /tmp/frameworks.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.metadata
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import aiohttp

from testbed.backends.base import describe
from testbed.backends.factory import VLLM_CAPABILITIES
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.frameworks import framework
from testbed.loop.orchestrator import Limits
from testbed.loop.participants import Assistant, DialogueUser, TurnSampling
from testbed.specs.agent import AgentSpec, SamplingSpec
from testbed.specs.loader import ResolvedAgent
from testbed.transcript import Message, Transcript

MOCK = Path(__file__).resolve().parent / "mock_openai.py"
ASSISTANT_PROMPT = "You are a helpful assistant."
PERSONA = "You are a user who asked a question. Write the user's next message. Write [[END]] when you are done."
QUESTION = "What is 2 + 3?"
END_MARKER = "[[END]]"
PACKAGES = ("autogen-agentchat", "autogen-ext", "langgraph", "langchain-openai", "camel-ai", "aiohttp", "openai")
NOISY_LOGGERS = ("autogen_core", "autogen_agentchat", "autogen_ext", "camel", "httpx", "openai", "langchain", "langgraph")


@dataclass
class Sample:
    """One timed batch: wall and client CPU seconds, server CPU seconds, turns generated, episodes that failed."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    server_cpu_s: float = 0.0
    turns: int = 0
    expected: int = 0
    errors: list[str] = field(default_factory=list)


def server_cpu_s(pid: int) -> float:
    """User plus system CPU seconds the process has used so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timed(conversations, expected: int, server_pid: int) -> Sample:
    """Run the conversations concurrently, each returning (turns generated, error or None); time them into a Sample
    (wall, this process's CPU, the server's CPU) after a full collection and the cleanup it schedules (clients that
    earlier batches left open close their connections on the loop)."""
    gc.collect()
    await asyncio.sleep(0.05)
    gc.collect()
    sample = Sample(expected=expected)
    s0, c0, t0 = server_cpu_s(server_pid), time.process_time(), time.perf_counter()
    results = await asyncio.gather(*conversations)
    sample.wall_s, sample.cpu_s = time.perf_counter() - t0, time.process_time() - c0
    sample.server_cpu_s = server_cpu_s(server_pid) - s0
    sample.turns = sum(n for n, _ in results)
    sample.errors = [e for _, e in results if e]
    return sample


@contextlib.contextmanager
def mock_server(latency_ms: float, reply_words: int, cores: set[int], *flags: str):
    """The mock server as a subprocess pinned to `cores`, with further command-line `flags`: yields (base_url, pid)."""
    with tempfile.TemporaryDirectory(prefix="bench-frameworks-") as tmp:
        port_file, log = Path(tmp) / "port.json", open(Path(tmp) / "server.log", "w+")
        proc = subprocess.Popen([sys.executable, str(MOCK), "--port", "0", "--port-file", str(port_file), "--latency-ms",
                                 str(latency_ms), "--reply-words", str(reply_words), "--model", "mock", *flags],
                                stdout=subprocess.DEVNULL, stderr=log)
        try:
            os.sched_setaffinity(proc.pid, cores)
            deadline = time.monotonic() + 30
            while not port_file.exists() or not port_file.read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the mock server did not start: {log.read()[-500:]}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{json.loads(port_file.read_text())['port']}/v1", proc.pid
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()


@contextlib.contextmanager
def measured(server_pid: int, into: dict):
    """Time the block: its wall, client CPU and server CPU seconds, written into `into` when it ends."""
    s0, c0, t0 = server_cpu_s(server_pid), time.process_time(), time.perf_counter()
    try:
        yield
    finally:
        into.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, server_cpu_s=server_cpu_s(server_pid) - s0)


def sample_row(got: list[Sample]) -> dict:
    """One client's rounds as a row: median turns/s, CPU ms per turn and server CPU share; totals; errors; the rounds."""
    errors = [e for s in got for e in s.errors]
    return {
        "turns_per_s": statistics.median(s.turns / s.wall_s for s in got),
        "cpu_ms_per_turn": statistics.median(1000 * s.cpu_s / max(s.turns, 1) for s in got),
        "server_cpu_share": statistics.median(s.server_cpu_s / s.wall_s for s in got),
        "turns": sum(s.turns for s in got), "expected_turns": sum(s.expected for s in got),
        "errors": len(errors), "first_error": errors[0] if errors else None,
        "rounds": [asdict(s) | {"errors": len(s.errors)} for s in got],
    }


def make_pair(backend: OpenAICompatibleBackend, seed: int) -> tuple[Assistant, DialogueUser]:
    """An assistant and an instructed dialogue user on one backend, as a dialogue run builds them."""
    a = ResolvedAgent(AgentSpec(name="helper", backend="vllm", model="mock", base_url=backend.base_url,
                                sampling=SamplingSpec(temperature=0.0, max_tokens=64)), Path("helper.yaml"), ASSISTANT_PROMPT)
    u = ResolvedAgent(AgentSpec(name="simuser", backend="vllm", model="mock", base_url=backend.base_url), Path("simuser.yaml"),
                      None)
    return Assistant(a, backend), DialogueUser(u, backend, "instructed", PERSONA, TurnSampling(0.7, 48, 1.0, seed, True))


def opening() -> Transcript:
    """The dialogue's opening: the assistant's system prompt and the dataset's question."""
    t = Transcript()
    t.append(Message("system", ASSISTANT_PROMPT, "helper", 0))
    t.append(Message("user", QUESTION, "dataset", 1))
    return t


async def framework_batch(name: str, base_url: str, conversations: int, user_turns: int, server_pid: int) -> Sample:
    """`conversations` concurrent dialogues through `framework(name).converse`, timed."""
    backend = OpenAICompatibleBackend(base_url=base_url, model="mock", capabilities=VLLM_CAPABILITIES,
                                      concurrency=conversations, max_retries=0)
    await backend.start()
    limits = Limits(max_user_turns=user_turns, end_marker=END_MARKER)

    async def one(i: int) -> tuple[int, str | None]:
        transcript = opening()
        try:
            assistant, user = make_pair(backend, 11 + i)
            await framework(name).converse(transcript, assistant, user, limits)
            error = None
        except Exception as exc:
            error = describe(exc)
        return len(transcript.messages) - 2, error

    try:
        return await timed([one(i) for i in range(conversations)], conversations * (2 * user_turns - 1), server_pid)
    finally:
        await backend.close()


async def bare_batch(base_url: str, conversations: int, user_turns: int, server_pid: int) -> Sample:
    """The same requests from a minimal aiohttp loop: sequential within a conversation, concurrent across them."""
    requests, url = 2 * user_turns - 1, f"{base_url}/chat/completions"

    async def one(session: aiohttp.ClientSession) -> tuple[int, str | None]:
        messages = [{"role": "system", "content": ASSISTANT_PROMPT}, {"role": "user", "content": QUESTION}]
        try:
            for k in range(requests):
                body = {"model": "mock", "messages": messages, "max_tokens": 64, "temperature": 0.0}
                async with session.post(url, json=body) as resp:
                    reply = await resp.json()
                messages.append({"role": "user" if k % 2 else "assistant", "content": reply["choices"][0]["message"]["content"]})
        except Exception as exc:
            return len(messages) - 2, describe(exc)
        return len(messages) - 2, None

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async with session.get(f"{base_url}/models") as resp:
            await resp.read()
        return await timed([one(session) for _ in range(conversations)], conversations * requests, server_pid)


def batch(name: str, *args):
    """The bare loop's or one framework's batch (base_url, conversations, user_turns, server_pid), to await."""
    return bare_batch(*args) if name == "bare" else framework_batch(name, *args)


async def bench_latency(latency_ms: float, args: argparse.Namespace, server_cores: set[int]) -> dict:
    """Warm-up, then alternating rounds of every framework and the bare loop on one mock server; the medians."""
    names = ["bare", *args.frameworks]
    failed: dict[str, str] = {}
    samples: dict[str, list[Sample]] = {n: [] for n in names}
    with mock_server(latency_ms, args.reply_words, server_cores) as (base_url, pid):
        for name in names:
            try:
                if name != "bare":
                    framework(name)
                warm = await batch(name, base_url, min(args.conversations, 8), args.user_turns, pid)
                if warm.errors and len(warm.errors) == min(args.conversations, 8):
                    failed[name] = warm.errors[0]
            except Exception as exc:
                failed[name] = describe(exc)
            if name in failed:
                print(f"  {name}: failed in warm-up, skipped: {failed[name][:200]}", flush=True)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            line = []
            for name in (n for n in order if n not in failed):
                try:
                    s = await batch(name, base_url, args.conversations, args.user_turns, pid)
                except Exception as exc:
                    failed[name] = describe(exc)
                    line.append(f"{name} failed")
                    continue
                samples[name].append(s)
                line.append(f"{name} {s.turns / s.wall_s:.0f} turns/s")
            print(f"  {latency_ms:g} ms, round {r + 1}: " + ", ".join(line), flush=True)
    return summarise(names, samples, failed)


def summarise(names: list[str], samples: dict[str, list[Sample]], failed: dict[str, str]) -> dict:
    """Per framework: median turns/s, CPU ms per turn, server CPU share, the ratios to bare, errors and the rounds."""
    rows: dict[str, dict] = {}
    for name in names:
        if name in failed:
            rows[name] = {"failed": failed[name]}
            continue
        rows[name] = sample_row(samples[name])
    bare = rows.get("bare", {})
    for row in rows.values():
        if "failed" not in row and "turns_per_s" in bare:
            row["turns_ratio"] = row["turns_per_s"] / bare["turns_per_s"]
            row["cpu_ratio"] = row["cpu_ms_per_turn"] / bare["cpu_ms_per_turn"]
    return rows


def table(latency_ms: float, rows: dict, args: argparse.Namespace) -> str:
    """The plain-text table of one latency."""
    turns = 2 * args.user_turns - 1
    out = [f"latency {latency_ms:g} ms: {args.conversations} conversations x {turns} turns, {args.reply_words}-word replies, "
           f"median of {args.rounds} round(s)",
           f"  {'framework':<10} {'turns/s':>9} {'CPU ms/turn':>12} {'turns/s÷bare':>13} {'CPU÷bare':>9} {'server CPU':>11}"
           "  notes"]
    for name, r in rows.items():
        if "failed" in r:
            out.append(f"  {name:<10} failed: {r['failed'][:160]}")
            continue
        notes = [] if r["turns"] == r["expected_turns"] else [f"turns {r['turns']}/{r['expected_turns']}"]
        if r["errors"]:
            notes.append(f"{r['errors']} episode(s) errored, first: {r['first_error'][:120]}")
        nan = float("nan")
        out.append(f"  {name:<10} {r['turns_per_s']:>9.1f} {r['cpu_ms_per_turn']:>12.3f} {r.get('turns_ratio', nan):>13.3f} "
                   f"{r.get('cpu_ratio', nan):>9.2f} {100 * r['server_cpu_share']:>10.0f}%  {'; '.join(notes)}")
    return "\n".join(out)


def verdict(results: dict[str, dict]) -> tuple[float | None, str]:
    """native ÷ bare turns/s at 100 ms latency, and the line that states it against the 0.9 target."""
    row = results.get("100", {}).get("native", {})
    ratio = row.get("turns_ratio")
    if ratio is None:
        why = row.get("failed") or "not measured (needs --latency-ms with 100 and native in --frameworks)"
        return None, f"native/bare at 100 ms: {why}"
    return ratio, f"native/bare at 100 ms: {ratio:.2f} (target ≥ 0.9): {'ok' if ratio >= 0.9 else 'BELOW TARGET'}"


def machine(client_core: int, server_cores: set[int]) -> dict:
    """Where and with what the benchmark ran."""
    versions = {}
    for p in PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[p] = importlib.metadata.version(p)
    return {"client_core": client_core, "server_cores": sorted(server_cores), "cpus_online": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(), "python": platform.python_version(), "packages": versions}


def quiet() -> None:
    """Silence the frameworks' loggers and warnings so the output stays readable."""
    os.environ.setdefault("CAMEL_LOGGING_DISABLED", "true")
    warnings.filterwarnings("ignore")
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def pin_client(parser: argparse.ArgumentParser, core: int) -> set[int]:
    """Pin this process (the client) to `core` and return the cores left for the mock server; a core this process
    may not use is a usage error."""
    available = os.sched_getaffinity(0)
    if core not in available:
        parser.error(f"--client-core {core} is not among this process's cores {sorted(available)}")
    os.sched_setaffinity(0, {core})
    return (available - {core}) or {core}


def main() -> None:
    """Parse arguments, pin the client, run every latency, print the tables (and write JSON when asked)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frameworks", default="native,autogen,langgraph,camel", type=lambda s: [x for x in s.split(",") if x],
                   help="comma-separated framework names")
    p.add_argument("--conversations", type=int, default=200, help="concurrent conversations per batch")
    p.add_argument("--user-turns", type=int, default=3, help="user turns per conversation, the opening included")
    p.add_argument("--latency-ms", default="0,100", type=lambda s: [float(x) for x in s.split(",") if x],
                   help="comma-separated server latencies, one mock server each")
    p.add_argument("--reply-words", type=int, default=20, help="words per mock reply")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds; medians are reported")
    p.add_argument("--client-core", type=int, default=0, help="the one core the client runs on (the server gets the rest)")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    quiet()
    server_cores = pin_client(p, args.client_core)
    facts = machine(args.client_core, server_cores)
    print(f"client on core {args.client_core}, mock server on cores {sorted(server_cores)} of {facts['cpus_online']}; "
          f"python {facts['python']}; " + ", ".join(f"{k} {facts['packages'].get(k, '-')}" for k in PACKAGES), flush=True)
    if server_cores == {args.client_core}:
        print("note: one core only, the server shares the client's core", flush=True)

    async def run_all() -> dict[str, dict]:
        return {f"{lat:g}": await bench_latency(lat, args, server_cores) for lat in args.latency_ms}

    results = asyncio.run(run_all())
    for lat in args.latency_ms:
        print(table(lat, results[f"{lat:g}"], args))
    ratio, line = verdict(results)
    print(line)
    if args.json:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        report = {"machine": facts, "settings": settings, "latencies": results, "native_over_bare_100ms": ratio}
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
