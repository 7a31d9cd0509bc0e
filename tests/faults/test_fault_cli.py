"""`testbed run` and `report` against a fault-injecting server: clear outcomes, reasons kept, reruns finish the rest."""

from __future__ import annotations

import json
import time

import pytest

from fault_server import Fault, FaultServer, ok
from fault_specs import episodes, is_user_request, write_probe
from helpers import run_cli, run_id_of
from testbed.datasets import load_items

QUESTIONS = [i.messages[0]["content"] for i in load_items("gsm8k", limit=3)]
TRANSIENT = ["status_500", "reset", "close", "garbage_status", "non_utf8", "str_tokens", "null_content", "markup_500"]


def fault(name: str) -> Fault:
    if name == "status_500":
        return Fault("raw", status=500, body=b'{"error": "busy"}')
    if name == "markup_500":
        return Fault("raw", status=500, body=b"[bold red]boom[/] [/nope] :m:")
    return Fault(name)


def hostile(request) -> Fault:
    """Item 0's answer never reads; item 1's user turns never read; every other first attempt fails once."""
    if QUESTIONS[0] in request.text and not is_user_request(request.text):
        return Fault("int_content")
    if QUESTIONS[1] in request.text and is_user_request(request.text):
        return Fault("garbage_status")
    if request.seen == 1:
        return fault(TRANSIENT[request.number % len(TRANSIENT)])
    return ok("Why did you add those numbers?")


def no_traceback(proc) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_a_hostile_server_ends_in_errors_with_reasons_and_a_rerun_finishes(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(hostile) as server:
        spec = write_probe(tmp_path, server.base_url)
        first = run_cli("run", str(spec), "--store", str(store), "-q", timeout=120)
        no_traceback(first)
        assert first.returncode == 1, first.stdout + first.stderr
        assert "2/6 episodes done, 4 errors" in first.stdout
        assert "episode(s) failed" in first.stdout
        before = episodes(store)
        errored = {e: v for e, v in before.items() if v[0] == "error"}
        assert len(errored) == 4
        reasons = " | ".join(v[1] for v in errored.values())
        assert "assistant: unreadable reply" in reasons and "content` is int" in reasons
        assert "user: " in reasons and server.base_url in reasons

        run_id = run_id_of(first.stdout)
        report = run_cli("report", run_id, "--store", str(store), "--format", "json")
        no_traceback(report)
        rows = json.loads(report.stdout)
        assert sum(r["errors"] for r in rows) == 4 and sum(r["episodes"] for r in rows) == 6
        assert sum(r["judged"] for r in rows) == 2, "follow-up rates are over the done episodes only"

        server.plan = lambda r: ok("Why did you add those numbers?")
        second = run_cli("run", str(spec), "--store", str(store), "-q", timeout=120)
        no_traceback(second)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "6/6 episodes done, 0 errors, 2 already finished" in second.stdout
        after = episodes(store)
        assert all(after[e] == v for e, v in before.items() if v[0] == "done"), "finished episodes are untouched"


def test_markup_and_emoji_codes_in_reasons_and_names_print_as_text(tmp_path):
    store = tmp_path / "s.sqlite"
    body = b"[bold red]boom[/] [/nope] [link=file:///etc]x :smile: :m:"
    with FaultServer(lambda r: Fault("raw", status=400, body=body) if is_user_request(r.text) else ok("It is 18."), model="m") as server:
        spec = write_probe(tmp_path, server.base_url, model="m", items=1, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), timeout=120)
        no_traceback(run)
        assert run.returncode == 1
        assert "[/nope]" in run.stdout and ":smile:" in run.stdout
        report = run_cli("report", run_id_of(run.stdout), "--store", str(store))
        no_traceback(report)
        assert report.returncode == 0
        assert "[/nope]" in report.stdout and "Ⓜ" not in report.stdout and "😄" not in report.stdout
        assert "assistant: m" in report.stdout


def test_the_api_key_is_nowhere_in_store_output_or_report(tmp_path, monkeypatch):
    secret = "sk-live-TOPSECRET-9f8e7d6c5b4a"
    monkeypatch.setenv("TB_FAULT_KEY", secret)
    store = tmp_path / "s.sqlite"
    plan = lambda r: Fault("echo_auth", status=500) if is_user_request(r.text) else ok(f"Echo: Bearer {secret}")
    with FaultServer(plan) as server:
        spec = write_probe(tmp_path, server.base_url, api_key_env="TB_FAULT_KEY", items=2, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), timeout=120)
        assert any(secret in r.headers.get("authorization", "") for r in server.requests), "the key was sent"
        report = run_cli("report", run_id_of(run.stdout), "--store", str(store), "--format", "markdown")
        runs = run_cli("runs", "--store", str(store))
    assert run.returncode == 1 and "episode(s) failed" in run.stdout
    assert "[REDACTED]" in run.stdout
    for text in (run.stdout, run.stderr, report.stdout, report.stderr, runs.stdout):
        assert secret not in text
    for path in tmp_path.glob("s.sqlite*"):
        assert secret.encode() not in path.read_bytes(), path


def test_a_key_rejected_mid_run_stops_the_run_and_keeps_what_finished(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_FAULT_KEY", "sk-rejected-123456")
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why?") if r.number < 4 else Fault("raw", status=401, body=b'{"error": "revoked"}')) as server:
        spec = write_probe(tmp_path, server.base_url, api_key_env="TB_FAULT_KEY", items=3, concurrency=1)
        run = run_cli("run", str(spec), "--store", str(store), "-q", timeout=120)
        sent = server.chat_count()
    no_traceback(run)
    assert run.returncode == 2
    assert "refused the API key (HTTP 401)" in run.stderr and "TB_FAULT_KEY" in run.stderr
    assert "run the same command again to resume" in run.stderr
    assert sent == 5, "nothing is sent after the rejection"
    stored = episodes(store)
    assert stored and all(v[0] == "done" for v in stored.values()), "a rejected key is not an episode's error"


def test_a_dead_server_fails_in_seconds_naming_the_url(tmp_path):
    server = FaultServer().start()
    url = server.base_url
    server.stop()
    spec = write_probe(tmp_path, url)
    started = time.monotonic()
    run = run_cli("run", str(spec), "--store", str(tmp_path / "s.sqlite"), timeout=60)
    assert time.monotonic() - started < 10
    no_traceback(run)
    assert run.returncode == 2 and url in run.stderr and "start the server or fix base_url" in run.stderr


def test_a_hung_server_stops_the_run_with_a_clear_reason(tmp_path):
    server = FaultServer()

    def hang_everything(request):
        server.models_fault = Fault("hang")
        return Fault("hang")

    server.plan = hang_everything
    with server:
        spec = write_probe(tmp_path, server.base_url, items=1, temperatures=(0.0,))
        started = time.monotonic()
        run = run_cli("run", str(spec), "--store", str(tmp_path / "s.sqlite"), "-q", timeout=60)
    no_traceback(run)
    assert run.returncode == 2
    assert "stopped answering" in run.stderr and "did not answer within" in run.stderr
    assert time.monotonic() - started < 20
    assert server.chat_count() == 1


@pytest.mark.parametrize("command", [["report", "nope"], ["runs"], ["graph", "nope"], ["agree", "nope", "--a", "x", "--b", "y"]])
def test_reading_commands_never_create_a_store(tmp_path, command):
    missing = tmp_path / "typo.sqlite"
    proc = run_cli(*command, "--store", str(missing))
    no_traceback(proc)
    assert proc.returncode == 2
    assert f"no store at {missing}" in proc.stderr
    assert not missing.exists()
