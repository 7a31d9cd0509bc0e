"""The testbed starts and stops its own vLLM server: after a finished run and after Ctrl-C."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time

import psutil
import pytest

from helpers import REPO, TESTBED, run_cli, write_yaml

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
