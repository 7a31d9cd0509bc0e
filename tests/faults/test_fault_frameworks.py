"""Every framework against a fault server over real HTTP, through the installed command: faults are retried as
the native loop retries them, a refused key stops the run, a failed episode has a one-line reason and its
traceback goes to the run's log file, and no key reaches any channel."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fault_server import Fault, FaultServer, ok
from fault_specs import write_dialogue
from helpers import run_cli, run_id_of

FRAMEWORKS = ("native", "autogen", "langgraph", "camel")
AGENT_FRAMEWORKS = FRAMEWORKS[1:]
KEY = "sk-testbed-echoed-0123456789abcdef"
MIXED = {0: Fault("raw", status=500, body=b'{"error": {"message": "overloaded"}}'), 1: Fault("reset"), 2: Fault("close"),
         3: Fault("not_json"), 4: Fault("raw", status=429, body=b'{"error": {"message": "slow down"}}', headers={"Retry-After": "0"})}


def mixed_faults(request) -> Fault:
    """Half of all first attempts fail, one of five ways; every retry of the same body is answered."""
    return MIXED.get(request.number % 10, ok()) if request.seen == 1 else ok()


def run_framework(name: str, spec: Path, folder: Path):
    """`testbed run --framework NAME` on the spec into folder/s.sqlite, quiet, without report or judge."""
    return run_cli("run", str(spec), "--framework", name, "--store", str(folder / "s.sqlite"), "-q", "--no-report", "--no-judge")


def stored(db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT status, error_reason FROM episodes ORDER BY episode_id").fetchall()


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_transient_faults_of_every_kind_are_retried_and_every_episode_finishes(tmp_path, name):
    with FaultServer(mixed_faults) as server:
        spec = write_dialogue(tmp_path, server.base_url, items=3)
        out = run_framework(name, spec, tmp_path)
        failed_first = sum(r.seen == 1 and r.number % 10 in MIXED for r in server.requests)
    assert out.returncode == 0, out.stderr
    assert "3/3 episodes done, 0 errors" in out.stdout
    assert failed_first >= 3, "the mix really failed requests"
    assert "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize("name", AGENT_FRAMEWORKS)
def test_a_persistent_fault_is_a_one_line_reason_and_the_traceback_goes_to_the_run_log(tmp_path, name):
    with FaultServer(lambda r: Fault("not_json")) as server:
        spec = write_dialogue(tmp_path, server.base_url, items=2, max_retries=1)
        out = run_framework(name, spec, tmp_path)
        sent = server.chat_count()
    assert out.returncode == 1, out.stderr
    assert "0/2 episodes done, 2 errors" in out.stdout
    assert sent == 4, "each episode's first request is sent twice (max_retries: 1), then the episode fails"
    [(status, reason), _] = stored(tmp_path / "s.sqlite")
    assert status == "error" and "\n" not in reason and "Traceback" not in reason
    assert reason.startswith(f"{name}: unreadable reply from {server.base_url}/chat/completions: the body is not JSON")
    assert reason.endswith("(gave up after 2 attempts)")
    assert "Traceback" not in out.stdout + out.stderr
    log = tmp_path / "logs" / f"{run_id_of(out.stdout)}.log"
    assert str(log) in out.stdout and "Traceback (most recent call last)" in log.read_text()


def every_channel(out, folder: Path) -> str:
    """stdout, stderr and every file the run wrote (the store, its WAL, the log), as one text."""
    texts = [out.stdout, out.stderr]
    texts += [p.read_bytes().decode("latin-1") for p in folder.rglob("*") if p.is_file()]
    return "\n".join(texts)


def echoing_run(folder: Path, name: str, status: int, **spec):
    """A framework run with its key in FAULT_KEY against a server that answers `status` quoting the key it was sent;
    the CLI's output and the requests the server saw."""
    with FaultServer(lambda r: Fault("echo_auth", status=status)) as server:
        out = run_framework(name, write_dialogue(folder, server.base_url, api_key_env="FAULT_KEY", **spec), folder)
    return out, server


@pytest.mark.parametrize("name", AGENT_FRAMEWORKS)
def test_a_refused_key_stops_the_run_at_once_naming_the_variable_and_no_key_is_on_any_channel(tmp_path, name, monkeypatch):
    monkeypatch.setenv("FAULT_KEY", KEY)
    out, server = echoing_run(tmp_path, name, 401, items=6, concurrency=2)
    assert out.returncode == 2
    assert f"{server.base_url}/chat/completions refused the API key (HTTP 401): check the key in FAULT_KEY" in out.stderr
    assert server.chat_count() <= 2, "the requests in flight when the first refusal came, and none after it"
    assert KEY not in every_channel(out, tmp_path)


@pytest.mark.parametrize("name", AGENT_FRAMEWORKS)
def test_a_server_that_echoes_the_key_in_its_500s_gets_it_on_no_channel(tmp_path, name, monkeypatch):
    monkeypatch.setenv("FAULT_KEY", KEY)
    out, server = echoing_run(tmp_path, name, 500, items=2, max_retries=1)
    assert out.returncode == 1, out.stderr
    assert "0/2 episodes done, 2 errors" in out.stdout
    assert any(KEY in r.headers.get("authorization", "") for r in server.requests), "the key was sent, and echoed back"
    assert all("HTTP 500" in reason for _, reason in stored(tmp_path / "s.sqlite"))
    assert KEY not in every_channel(out, tmp_path)


@pytest.mark.parametrize("name", AGENT_FRAMEWORKS)
def test_a_server_that_stops_answering_stops_the_framework_run_like_native(tmp_path, name):
    server = FaultServer()

    def hang_after_the_first(request):
        if request.number == 0:
            return ok()
        server.models_fault = Fault("hang")
        return Fault("hang")

    server.plan = hang_after_the_first
    with server:
        spec = write_dialogue(tmp_path, server.base_url, items=4, concurrency=1)
        out = run_framework(name, spec, tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "the server stopped answering during the run" in out.stderr and "did not answer within" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr
