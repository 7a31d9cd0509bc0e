"""Framework runs as a user runs them (`testbed run --framework X`, one process per run): peak memory as the
episodes grow, and the error share under a mix of server faults beside the native loop's.

Memory: each framework runs `--small` and then `--large` dialogue episodes (one GSM8K item each, an
instructed user, `--user-turns` user turns, concurrency `--concurrency`) against the mock OpenAI
server in its own process; the peak RSS of the `testbed` process is read from the kernel when it
exits (wait4). Flat means the large run's peak is within 1.5x of the small one's.

Faults: each framework and native run the same `--fault-episodes` episodes against a fault server
that answers every request, first attempts and retries alike, with 4 % each of HTTP 500, a reset, a
closed connection, a body that is not JSON and a 429 (so 20 % of all requests fail); the agent
retries 4 times, as shipped. The error share of each is printed beside native's.

    .venv/bin/python benchmarks/framework_runs.py
    .venv/bin/python benchmarks/framework_runs.py --frameworks autogen --small 50 --large 200 --fault-episodes 0
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TESTBED = [str(ROOT / ".venv" / "bin" / "testbed")]
sys.path.insert(0, str(ROOT / "tests" / "faults"))

from fault_server import Fault, FaultServer, ok  # noqa: E402

FAULTS = (Fault("raw", status=500, body=b'{"error": {"message": "overloaded"}}'), Fault("reset"), Fault("close"), Fault("not_json"),
          Fault("raw", status=429, body=b'{"error": {"message": "slow down"}}', headers={"Retry-After": "0"}))
FAULT_SHARE = 0.04


def spec(folder: Path, base_url: str, episodes: int, user_turns: int, concurrency: int) -> Path:
    """A dialogue spec on `base_url`: `episodes` GSM8K openings, one instructed conversation each."""
    folder.mkdir(parents=True, exist_ok=True)
    agent = {"name": "bench", "backend": "vllm", "model": "mock", "base_url": base_url, "timeout_s": 10, "concurrency": concurrency}
    (folder / "agent.yaml").write_text(yaml.safe_dump(agent))
    (folder / "user.md").write_text((ROOT / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    data = {"kind": "dialogue", "name": "bench", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": episodes},
            "assistant": "agent.yaml", "user": "agent.yaml", "user_modes": ["instructed"], "user_prompt_file": "user.md",
            "temperatures": [0.7], "max_tokens": 16, "max_user_turns": user_turns, "end_marker": "[[END]]"}
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(framework: str, path: Path, store: Path) -> dict:
    """One `testbed run` in its own process: wall time, peak RSS (MB, from wait4), and the episodes' statuses."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*TESTBED, "run", str(path), "--framework", framework, "--store", str(store), "-q", "--no-report",
                                 "--no-judge"], stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    with sqlite3.connect(store) as conn:
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM episodes GROUP BY status").fetchall())
    return {"framework": framework, "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024), "done": counts.get("done", 0),
            "errors": counts.get("error", 0), "returncode": proc.returncode, "stderr_lines": len(stderr.splitlines())}


def mock_server(folder: Path) -> tuple[subprocess.Popen, str]:
    """The mock OpenAI server in its own process, and its base URL."""
    port_file = folder / "port.json"
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "mock_openai.py"), "--port-file", str(port_file),
                             "--reply-words", "12"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline:
            raise SystemExit("the mock server did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{json.loads(port_file.read_text())['port']}/v1"


def memory(frameworks: list[str], sizes: tuple[int, int], args: argparse.Namespace, folder: Path) -> list[dict]:
    """Each framework's peak RSS at the small and the large size, and their ratio."""
    proc, base_url = mock_server(folder)
    rows = []
    try:
        for name in frameworks:
            row = {"framework": name}
            for size in sizes:
                path = spec(folder / f"{name}-{size}", base_url, size, args.user_turns, args.concurrency)
                got = run(name, path, folder / f"{name}-{size}" / "store.sqlite")
                row[size] = got
                print(f"  memory {name:9} {size:5} episodes: {got['peak_rss_mb']:5} MB peak, {got['done']} done, {got['errors']} errors, "
                      f"{got['wall_s']} s", flush=True)
            row["ratio"] = round(row[sizes[1]]["peak_rss_mb"] / row[sizes[0]]["peak_rss_mb"], 2)
            rows.append(row)
    finally:
        proc.terminate()
        proc.wait(10)
    return rows


def mixed_faults(seed: int):
    """A plan failing each request with FAULT_SHARE of each fault kind, decided by the request's number."""
    def plan(request) -> Fault:
        roll = random.Random(seed * 1_000_003 + request.number).random()
        index = int(roll / FAULT_SHARE)
        return FAULTS[index] if index < len(FAULTS) else ok()
    return plan


def faults(frameworks: list[str], args: argparse.Namespace, folder: Path) -> list[dict]:
    """Every framework and native on the same episodes under the fault mix: their error shares."""
    rows = []
    for name in dict.fromkeys(["native", *frameworks]):
        with FaultServer(mixed_faults(args.seed), model="mock") as server:
            path = spec(folder / f"faults-{name}", server.base_url, args.fault_episodes, args.user_turns, args.concurrency)
            got = run(name, path, folder / f"faults-{name}" / "store.sqlite")
            got["requests"] = server.chat_count()
        got["error_share_pct"] = round(100 * got["errors"] / args.fault_episodes, 2)
        print(f"  faults {name:9}: {got['errors']}/{args.fault_episodes} errors ({got['error_share_pct']} %), "
              f"{got['requests']} requests, {got['stderr_lines']} stderr lines", flush=True)
        rows.append(got)
    return rows


def main() -> None:
    """Measure, print, and write JSON when asked."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frameworks", default="autogen,langgraph,camel", type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--small", type=int, default=100, help="episodes of the small memory run")
    p.add_argument("--large", type=int, default=1000, help="episodes of the large memory run (GSM8K has 1,319 items)")
    p.add_argument("--fault-episodes", type=int, default=200, help="episodes per framework under faults (0: skip)")
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--user-turns", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        results = {"memory": memory(args.frameworks, (args.small, args.large), args, folder) if args.large else [],
                   "faults": faults(args.frameworks, args, folder) if args.fault_episodes else []}
    for row in results["memory"]:
        print(f"{row['framework']:9} peak RSS {row[args.small]['peak_rss_mb']} MB at {args.small} episodes, "
              f"{row[args.large]['peak_rss_mb']} MB at {args.large}: x{row['ratio']} ({'flat' if row['ratio'] <= 1.5 else 'GROWS'})")
    native = next((r for r in results["faults"] if r["framework"] == "native"), None)
    for row in results["faults"]:
        gap = row["error_share_pct"] - native["error_share_pct"] if native else 0.0
        print(f"{row['framework']:9} error share {row['error_share_pct']:5.2f} % ({gap:+.2f} points against native)")
    if args.json:
        args.json.write_text(json.dumps({**results, "args": {k: str(v) for k, v in vars(args).items()}}, indent=2, default=str))


if __name__ == "__main__":
    main()
