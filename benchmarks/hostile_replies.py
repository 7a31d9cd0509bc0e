"""Issue 36's hostile replies through the real `testbed` command of any checkout: wall time, peak memory, store size.

Each case is a `testbed run` subprocess (`--no-judge -q`, a fresh store) against a real server on
127.0.0.1 (aiohttp, in a thread of this process: benchmarks/hostile_server.py) holding the hostile
agent and the simulated user's model, a polite `backend: vllm` server that always asks "Could you say
more?" and so is sent the whole conversation, huge reply included, as a real user model would be.
The scenario is a gsm8k dialogue of up to 3 user turns:

- **50 MB reply**: 2 episodes; the assistant is `backend: http-agent`, and its server answers every
  turn with a 50 MB JSON reply (`{"content": <prose>}`).
- **endless body**: the same, the server streaming a chunked JSON body in 1 MB chunks for as long as
  the client reads. The agent's `timeout_s` is 20 so that code without a size limit stops in bounded
  time (with the default 300 s each attempt would stream for five minutes).
- **10 MB python reply**: 1 episode, the assistant `backend: python` (hostile_agent:HugeFirstReply)
  answering 10 MB on its first turn, run with `--wire`; then the views of that episode:
  `testbed show-episode` and `testbed wire` (stdout to /dev/null), and replay: seconds from building
  `ReplayApp(store, run, episode)` until its transcript screen is up and idle (headless textual
  Pilot at 120x40, in a subprocess with the checkout's testbed). Where the checkout's agent spec
  has `max_reply_bytes` (testbed.limits), it is set to 16 MB so the reply is stored whole and the
  views have it to show.

Peak RSS is the larger of the process tree's resident memory and the command's own high-water mark
(VmHWM), both polled every 50 ms (wait4's ru_maxrss would start from this process's size at the
fork). A run whose tree passes `--kill-rss-gb` is killed, and so is any
command past its cap (`--run-cap-s`, `--view-cap-s`); the outcome column says which. The store
size counts the SQLite file and its WAL.

    .venv/bin/python benchmarks/hostile_replies.py --code /tmp/before --json /tmp/hostile-before.json
    .venv/bin/python benchmarks/hostile_replies.py --code . --json /tmp/hostile-after.json --cases 50mb,10mb
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml
from hostile_agent import filler_text
from hostile_server import HostileAgentServer
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
CASES = ("50mb", "endless", "10mb")
CLI = "import sys; sys.argv[0] = 'testbed'; from testbed.cli import main; main()"
"""How the checkout's command is started: its `testbed.cli.main`, found through PYTHONPATH (the package has no __main__)."""
REPLY_MB, PYTHON_REPLY_MB, ENDLESS_TIMEOUT_S = 50, 10, 20
SIZE = (120, 40)


def testbed_env(code: Path) -> dict[str, str]:
    """The environment of every subprocess: the checkout first on the path, then this folder (the hostile agent)."""
    return {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{HERE}", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
            "TESTBED_STORE": "", "COLUMNS": "120"}


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 for any that ended meanwhile)."""
    total = 0
    try:
        family = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in family:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def high_water_rss(pid: int) -> int:
    """The process's own peak resident bytes so far (VmHWM; 0 once it is gone). Unlike wait4's ru_maxrss, which
    starts from the forking parent's size, it counts only what the command itself touched since its exec."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((l for l in status.splitlines() if l.startswith("VmHWM:")), None)
    return int(line.split()[1]) * 1024 if line else 0


def measure(command: list[str], *, env: dict[str, str], cwd: Path, cap_s: float, kill_rss: int | None = None,
            quiet_stdout: bool = False) -> dict:
    """Run one command in its own process group: wall s, peak RSS MB, rc, and why it was killed (None if it was not)."""
    out = open(os.devnull, "wb") if quiet_stdout else open(cwd / "stdout.txt", "wb")
    err = open(cwd / "stderr.txt", "wb")
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)
    watched, peak, killed, status = psutil.Process(proc.pid), 0, None, None
    while status is None:
        pid, raw = os.waitpid(proc.pid, os.WNOHANG)
        if pid:
            status = raw
            break
        peak = max(peak, tree_rss(watched), high_water_rss(proc.pid))
        elapsed = time.perf_counter() - started
        if kill_rss is not None and peak > kill_rss:
            killed = f"killed at {peak / 1e9:.1f} GB RSS after {elapsed:.0f} s"
        elif elapsed > cap_s:
            killed = f"> {cap_s:g} s (killed)"
        if killed:
            os.killpg(proc.pid, signal.SIGKILL)
            _, status = os.waitpid(proc.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    out.close(), err.close()
    stderr = (cwd / "stderr.txt").read_text(errors="replace")
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(peak / 1e6, 1), "rc": proc.returncode,
            "killed": killed, "traceback": "Traceback" in stderr, "stderr_tail": stderr.strip()[-600:]}


def write_dialogue(folder: Path, code: Path, assistant: dict, user: dict, episodes: int) -> Path:
    """The user's and the assistant's specs and a gsm8k dialogue scenario of `episodes` episodes in `folder`."""
    (folder / "prompts").mkdir(parents=True, exist_ok=True)
    (folder / "prompts" / "user.md").write_text((code / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    (folder / "user.yaml").write_text(yaml.safe_dump(user))
    (folder / "assistant.yaml").write_text(yaml.safe_dump(assistant))
    scenario = {"kind": "dialogue", "name": f"hostile-{folder.name}", "opening": "dataset", "dataset": "gsm8k",
                "items": {"limit": episodes}, "assistant": "assistant.yaml", "user": "user.yaml", "user_modes": ["instructed"],
                "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 64, "max_user_turns": 3,
                "end_marker": "[[END]]"}
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def store_facts(store: Path) -> dict:
    """Size of the store (file + WAL), its run id, each episode's status and reason, and its longest message."""
    if not store.exists():
        return {"store_mb": 0.0, "run_id": None, "episodes": [], "longest_message": None}
    size = sum(p.stat().st_size for p in (store, store.with_name(store.name + "-wal")) if p.exists())
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        run = db.execute("SELECT run_id FROM runs LIMIT 1").fetchone()
        episodes = [{"episode_id": e, "status": s, "reason": (r or "")[:300]}
                    for e, s, r in db.execute("SELECT episode_id, status, error_reason FROM episodes ORDER BY episode_id")]
        longest = db.execute("SELECT episode_id, turn_index, length(content) FROM messages "
                             "ORDER BY length(content) DESC LIMIT 1").fetchone()
    finally:
        db.close()
    return {"store_mb": round(size / 1e6, 1), "run_id": run[0] if run else None, "episodes": episodes,
            "longest_message": {"episode_id": longest[0], "turn_index": longest[1], "chars": longest[2]} if longest else None}


def has_reply_limit(code: Path, env: dict[str, str]) -> bool:
    """Whether the checkout's agent spec takes `max_reply_bytes` (the code after issue 36)."""
    probe = "from testbed.specs.agent import AgentSpec; print('max_reply_bytes' in AgentSpec.model_fields)"
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=code, capture_output=True, text=True, timeout=120)
    return done.stdout.strip() == "True"


def user_model(server: HostileAgentServer) -> dict:
    """The simulated user's spec: the server's polite model, reached as a running vLLM server would be."""
    return {"name": "user", "backend": "vllm", "model": "mock", "base_url": server.user_base_url}


def run_case(name: str, folder: Path, code: Path, assistant: dict, user: dict, episodes: int, args,
             extra: list[str] = ()) -> dict:
    """One `testbed run` of a dialogue with this assistant and user, measured, with the store's facts after it."""
    folder.mkdir(parents=True)
    scenario, store = write_dialogue(folder, code, assistant, user, episodes), folder / "store.sqlite"
    command = [sys.executable, "-c", CLI, "run", str(scenario), "--store", str(store), "--no-judge", "-q", *extra]
    got = measure(command, env=testbed_env(code), cwd=folder, cap_s=args.run_cap_s, kill_rss=int(args.kill_rss_gb * 1e9))
    return {"case": name, **got, **store_facts(store)}


def http_case(mode: str, folder: Path, code: Path, args) -> dict:
    """The 50 MB or endless case: the http-agent dialogue against the hostile server in that mode."""
    with HostileAgentServer(mode, filler_text(REPLY_MB * 1_000_000)) as server:
        assistant = {"name": "hostile-http", "backend": "http-agent", "url": server.url}
        if mode == "endless":
            assistant["timeout_s"] = ENDLESS_TIMEOUT_S
        name = f"{REPLY_MB} MB http reply" if mode == "big" else f"endless http body (timeout_s {ENDLESS_TIMEOUT_S})"
        result = run_case(name, folder, code, assistant, user_model(server), 2, args)
        result["server"] = server.served()
    return result


def view_cases(folder: Path, code: Path, facts: dict, args) -> list[dict]:
    """show-episode, wire and the replay app on the episode holding the longest message, each capped."""
    longest = facts["longest_message"]
    if not facts["run_id"] or not longest:
        return [{"case": f"{v}: not measured", "killed": "the run stored no message"} for v in ("show-episode", "wire", "replay")]
    run, episode, store, env = facts["run_id"], longest["episode_id"], str(folder / "store.sqlite"), testbed_env(code)
    results = []
    for view in ("show-episode", "wire"):
        workdir = folder / view
        workdir.mkdir()
        got = measure([sys.executable, "-c", CLI, view, run, episode, "--store", store], env=env, cwd=workdir,
                      cap_s=args.view_cap_s, quiet_stdout=True)
        results.append({"case": f"{PYTHON_REPLY_MB} MB: testbed {view}", **got})
    workdir = folder / "replay"
    workdir.mkdir()
    got = measure([sys.executable, str(Path(__file__).resolve()), "--replay-probe", store, run, episode], env=env, cwd=workdir,
                  cap_s=args.view_cap_s)
    probe = (workdir / "stdout.txt").read_text().strip().splitlines()
    results.append({"case": f"{PYTHON_REPLY_MB} MB: replay opens the episode", **got,
                    "replay": json.loads(probe[-1]) if probe and probe[-1].startswith("{") else None})
    return results


def python_case(folder: Path, code: Path, args) -> list[dict]:
    """The 10 MB python-agent run with --wire (the user's requests, the huge reply inside, are the wire log), then its
    three views."""
    assistant = {"name": "hostile-python", "backend": "python", "callable": "hostile_agent:HugeFirstReply",
                 "options": {"megabytes": PYTHON_REPLY_MB}}
    if has_reply_limit(code, testbed_env(code)):
        assistant["max_reply_bytes"] = 16 * 1024 * 1024
    with HostileAgentServer("big", "") as server:
        run = run_case(f"{PYTHON_REPLY_MB} MB python reply: run --wire", folder, code, assistant, user_model(server), 1, args,
                       ["--wire"])
        run["server"] = server.served()
    run["max_reply_bytes"] = assistant.get("max_reply_bytes")
    return [run, *view_cases(folder, code, run, args)]


def outcome(row: dict) -> str:
    """One line: killed or exit code, traceback, episode statuses, the longest message stored (from 0.1 MB), the replay's
    own figure."""
    parts = [row["killed"]] if row.get("killed") else []
    if "rc" in row and not row.get("killed"):
        parts.append(f"rc {row['rc']}")
    if row.get("traceback"):
        parts.append("traceback")
    if row.get("episodes"):
        statuses = [e["status"] for e in row["episodes"]]
        parts.append(", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses))))
        reasons = {e["reason"] for e in row["episodes"] if e["reason"]}
        parts += [f"“{r[:90]}”" for r in sorted(reasons)[:1]]
    elif "episodes" in row:
        parts.append("no episode stored")
    if row.get("longest_message") and row["longest_message"]["chars"] >= 100_000:
        parts.append(f"longest message {row['longest_message']['chars'] / 1e6:.1f} MB")
    if row.get("replay"):
        parts.append(f"in-app {row['replay']['open_s']:.1f} s")
    return "; ".join(parts)


def code_revision(code: Path) -> str:
    """The checkout's commit, with the count of changed files under testbed/ when its tree is not clean."""
    head = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(code), "status", "--porcelain", "--", "testbed"], capture_output=True,
                           text=True).stdout
    changed = len(dirty.splitlines())
    return f"{head or '?'}" + (f" + {changed} changed file(s) under testbed/" if changed else "")


def report(rows: list[dict], title: str, console: Console) -> None:
    """The side-by-side table: case, wall s, peak RSS MB, store MB, outcome."""
    table = Table(title=title, title_justify="left")
    for heading in ("case", "wall s", "peak RSS MB", "store MB", "outcome"):
        table.add_column(heading, justify="right" if heading in ("wall s", "peak RSS MB", "store MB") else "left",
                         no_wrap=heading != "outcome")
    for row in rows:
        store = f"{row['store_mb']:.1f}" if "store_mb" in row else "-"
        wall = f"> {row['wall_s']:.0f}" if (row.get("killed") or "").startswith(">") else f"{row.get('wall_s', float('nan')):.1f}"
        table.add_row(row["case"], wall, f"{row.get('peak_rss_mb', float('nan')):.0f}", store, outcome(row))
    console.print(table)


def replay_probe(store: str, run_id: str, episode_id: str) -> None:
    """In a subprocess with the checkout on the path: time ReplayApp opened on the episode until its transcript is up and idle."""
    import asyncio

    from testbed.replay.app import ReplayApp
    from testbed.store import Store

    def shown(app) -> bool:
        screen = app.screen
        if type(screen).__name__ != "TranscriptScreen" or not hasattr(screen, "view"):
            return False
        try:
            return len(screen.panels) == len(screen.view.turns)
        except AttributeError:
            return True

    async def opened() -> dict:
        started = time.perf_counter()
        app = ReplayApp(Store(Path(store), readonly=True), run_id, episode_id)
        async with app.run_test(size=SIZE) as pilot:
            while not shown(app):
                await asyncio.sleep(0.005)
            mounted = time.perf_counter() - started
            await pilot.pause()
            return {"mounted_s": round(mounted, 2), "open_s": round(time.perf_counter() - started, 2),
                    "turns": len(app.screen.view.turns)}

    print(json.dumps(asyncio.run(opened())), flush=True)


def main() -> None:
    """Parse arguments, run the chosen cases on the chosen checkout, print the table, write the JSON."""
    if len(sys.argv) == 5 and sys.argv[1] == "--replay-probe":
        replay_probe(*sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--code", type=Path, default=HERE.parent,
                   help="checkout whose testbed package is measured (default: this one)")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    p.add_argument("--json", type=Path, help="write every figure here as JSON")
    p.add_argument("--kill-rss-gb", type=float, default=6.0, help="kill a run whose process tree passes this resident size")
    p.add_argument("--run-cap-s", type=float, default=300.0, help="kill a run past this many seconds")
    p.add_argument("--view-cap-s", type=float, default=150.0,
                   help="kill a view (show-episode, wire, replay) past this many seconds")
    p.add_argument("--keep", type=Path, help="work in this folder and keep the stores (default: a temporary folder)")
    args = p.parse_args()
    code, chosen = args.code.resolve(), [c.strip() for c in args.cases.split(",") if c.strip()]
    if not (code / "testbed" / "cli" / "__init__.py").is_file() or set(chosen) - set(CASES):
        p.error(f"--code must be a checkout holding testbed/cli and --cases a subset of {', '.join(CASES)}")
    console = Console(highlight=False, width=max(150, shutil.get_terminal_size((150, 40)).columns))
    revision = code_revision(code)
    console.print(f"code: {code} at {revision}; {platform.node()}, {os.cpu_count()} CPUs, "
                  f"{psutil.virtual_memory().total / 2**30:.0f} GiB")
    work = args.keep or Path(tempfile.mkdtemp(prefix="hostile-replies-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    try:
        for case in chosen:
            console.print(f"{case} ...")
            folder = work / case
            shutil.rmtree(folder, ignore_errors=True)
            if case == "10mb":
                rows += python_case(folder, code, args)
            else:
                rows.append(http_case("big" if case == "50mb" else "endless", folder, code, args))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report(rows, f"hostile replies, code {code} at {revision}", console)
    if args.json:
        machine = {"cpus": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1)}
        settings = {"kill_rss_gb": args.kill_rss_gb, "run_cap_s": args.run_cap_s, "view_cap_s": args.view_cap_s,
                    "endless_timeout_s": ENDLESS_TIMEOUT_S}
        args.json.write_text(json.dumps({"code": str(code), "revision": revision, "python": sys.version.split()[0],
                                         "machine": machine, "settings": settings, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
