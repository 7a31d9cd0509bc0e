"""Two managed vLLM replicas of the embedded model; one is killed mid-run, the run finishes on the other.

Nothing finished is lost (every episode stored before the kill is still there, unchanged), no
episode is stored twice, every planned episode ends done, and the run's replica counts say which
replica was taken out, that it handed requests on, and that every generation was served exactly
once. The replica is killed only once it has finished a request (its Prometheus metrics say so):
two CPU servers on a small machine compete for the same cores, and one may finish nothing for a while.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from helpers import REPO, TESTBED, wait_for_episodes, write_yaml

pytestmark = pytest.mark.integration


def vllm_servers(pid: int) -> list[psutil.Process]:
    """The vLLM API server processes a testbed process started (its managed replicas)."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "vllm.entrypoints.openai.api_server" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def served_so_far(server: psutil.Process) -> float:
    """Requests the replica has finished, from its Prometheus metrics (`vllm:request_success_total`)."""
    port = server.cmdline()[server.cmdline().index("--port") + 1]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
            text = resp.read().decode()
    except OSError:
        return 0.0

    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("vllm:request_success_total"))


def stored(db: Path) -> dict[str, tuple]:
    """episode id → (status, finished_at)."""
    with sqlite3.connect(db) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT episode_id, status, finished_at FROM episodes")}


def test_a_replica_killed_mid_run_loses_nothing_and_the_run_finishes_on_the_other(tmp_path: Path):
    write_yaml(tmp_path / "replicas.yaml", {
        "name": "smollm2-replicas", "backend": "vllm", "model": "embedded", "concurrency": 8, "timeout_s": 120,
        "sampling": {"temperature": 0.0, "max_tokens": 48}, "server": {"replicas": 2, "startup_timeout_s": 900},
    })
    (tmp_path / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
    spec = write_yaml(tmp_path / "probe.yaml", {
        "kind": "probe", "name": "replica-kill", "dataset": "gsm8k", "items": {"limit": 10}, "assistant": "replicas.yaml",
        "user": "replicas.yaml", "user_modes": ["instructed", "raw"], "user_prompt_file": "user.md",
        "temperatures": [0.0, 1.0], "max_tokens": 48,
    })
    db = tmp_path / "store.sqlite"
    log = open(tmp_path / "run.log", "w+")
    run = subprocess.Popen([*TESTBED, "run", str(spec), "--store", str(db), "--quiet", "--no-judge"], cwd=REPO, stdout=log,
                           stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})
    try:
        wait_for_episodes(str(db), at_least=6, timeout_s=1200)
        servers = vllm_servers(run.pid)
        assert len(servers) == 2, f"expected two managed replicas, found {[s.cmdline() for s in servers]}"
        victim = servers[1]
        deadline = time.monotonic() + 600
        while served_so_far(victim) < 1:
            assert time.monotonic() < deadline and run.poll() is None, "the second replica finished no request while the run lasted"
            time.sleep(0.5)
        port = victim.cmdline()[victim.cmdline().index("--port") + 1]
        before = stored(db)
        os.killpg(victim.pid, signal.SIGKILL)
        run.wait(timeout=1200)
    finally:
        if run.poll() is None:
            run.kill()
        log.seek(0)
        output = log.read()
        log.close()
    assert run.returncode == 0, output[-3000:]
    after = stored(db)
    assert all(after[k] == v for k, v in before.items()), "an episode finished before the kill was changed or lost"
    with sqlite3.connect(db) as conn:
        planned = conn.execute("SELECT planned_episodes FROM runs").fetchone()[0]
        episodes, distinct = conn.execute("SELECT COUNT(*), COUNT(DISTINCT episode_id) FROM episodes").fetchone()
        counts = conn.execute("SELECT url, served, retried, out_reason FROM replica_requests ORDER BY url").fetchall()
        answers = conn.execute("SELECT COUNT(*) FROM shared_answers").fetchone()[0]
    assert episodes == distinct == planned and planned > len(before)
    assert all(status == "done" for status, _ in after.values())
    print("\nper-replica counts:", json.dumps([dict(zip(("url", "served", "retried", "out_reason"), c)) for c in counts], indent=1))
    killed = [c for c in counts if c[0].endswith(f":{port}/v1")]
    alive = [c for c in counts if not c[0].endswith(f":{port}/v1")]
    assert len(killed) == len(alive) == 1
    assert killed[0][3] is not None and alive[0][3] is None
    assert killed[0][1] >= 1 and killed[0][2] >= 1, "the killed replica served requests before it died, then handed its own on"
    assert killed[0][1] + alive[0][1] == answers + episodes, "every generation (shared answers, user turns) is served exactly once"
