"""The testbed starts and stops its own vLLM server: after a finished run, after Ctrl-C, after a SIGINT to its pid alone."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import time

import psutil
import pytest

from helpers import REPO, TESTBED, run_cli, wait_for_episodes, write_yaml

pytestmark = pytest.mark.integration


def vllm_server_pids() -> set[int]:
    """Pids of every vLLM API server process on the machine."""
    return {p.pid for p in psutil.process_iter(["cmdline"]) if "vllm.entrypoints.openai.api_server" in (p.info["cmdline"] or [])}


def ctrl_c_reaches_it() -> None:
    """Give the child the default SIGINT disposition, as a terminal's Ctrl-C finds it: a suite started in the
    background (`cmd &` without job control) ignores SIGINT, and an ignored signal is inherited across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def managed_servers(vllm_server):
    """A function listing vLLM servers started since the test began (the shared one excluded)."""
    before = vllm_server_pids()
    return lambda: sorted(vllm_server_pids() - before)


def probe_spec(folder, name: str, items: int, max_tokens: int):
    """A probe on the managed embedded model (raw user mode, greedy) with `items` GSM8K items."""
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-instructed.md").read_text())
    return write_yaml(folder / f"{name}.yaml", {
        "kind": "probe", "name": name, "dataset": "gsm8k", "items": {"limit": items},
        "assistant": str(REPO / "agents/smollm2.yaml"), "user": str(REPO / "agents/smollm2.yaml"),
        "user_modes": ["raw"], "temperatures": [0.0], "max_tokens": max_tokens,
    })


@pytest.fixture
def tiny_scenario(tmp_path):
    return probe_spec(tmp_path, "tiny-managed", 2, 16)


@pytest.fixture
def long_scenario(tmp_path):
    """Long enough (40 answers of up to 96 tokens) that Ctrl-C a second after the server appears lands mid-run."""
    return probe_spec(tmp_path, "long-managed", 40, 96)


def test_managed_server_is_started_used_and_stopped(managed_servers, tiny_scenario, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("run", str(tiny_scenario), "--store", db, "-q")
    assert out.returncode == 0, out.stderr
    assert "2/2 episodes done" in out.stdout
    assert managed_servers() == [], "the run stopped the server it started"


def test_ctrl_c_stops_the_managed_server_and_keeps_the_store(managed_servers, long_scenario, tmp_path):
    db = str(tmp_path / "s.sqlite")
    proc = subprocess.Popen([*TESTBED, "run", str(long_scenario), "--store", db, "-q"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches_it)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not managed_servers():
        time.sleep(0.5)
    assert managed_servers(), "the run started a server"
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "interrupted" in err and "run the same command again" in err
    for _ in range(60):
        if not managed_servers():
            break
        time.sleep(0.5)
    assert managed_servers() == []
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"


def server_tree(pid: int) -> tuple[list[int], int]:
    """The pids of a vLLM API server and every process it spawned (engine core, workers), and the port it serves."""
    server = psutil.Process(pid)
    cmdline = server.cmdline()
    return [pid, *(child.pid for child in server.children(recursive=True))], int(cmdline[cmdline.index("--port") + 1])


def running(pid: int) -> bool:
    """True while the process runs (a zombie nobody reaped has ended)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_sigint_to_the_run_process_alone_mid_run_ends_the_whole_server(long_scenario, tmp_path):
    """The reported case: a job scheduler sends SIGINT to `testbed run`'s pid, not its group, while episodes run; the
    API server, its engine core and workers, and its port are gone within seconds. (It needs no shared server, so
    run alone it starts one vLLM server only.)"""
    before = vllm_server_pids()
    managed_servers = lambda: sorted(vllm_server_pids() - before)  # noqa: E731
    db = str(tmp_path / "s.sqlite")
    proc = subprocess.Popen([*TESTBED, "run", str(long_scenario), "--store", db, "-q", "--no-judge"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches_it)
    try:
        wait_for_episodes(db, 1)
        [server] = managed_servers()
        pids, port = server_tree(server)
        assert len(pids) > 1, "the API server runs its engine in processes of its own"
        os.kill(proc.pid, signal.SIGINT)
        since = time.monotonic()
        _, err = proc.communicate(timeout=60)
        while time.monotonic() - since < 10 and any(running(pid) for pid in pids):
            time.sleep(0.2)
        assert [pid for pid in pids if running(pid)] == [], "every process of the server ended within 10 s"
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, f"nothing listens on {port} any more"
        assert proc.returncode == 130 and "interrupted" in err
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in managed_servers():
            psutil.Process(pid).kill()
