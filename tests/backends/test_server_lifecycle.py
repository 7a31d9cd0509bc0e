"""However a run ends, the managed model server it started is gone within seconds, checked by pid and port.

The owner is the real `testbed run` on an agent with a managed server, whose command is the stand-in
(tests/backends/stand_in_vllm_server.py): the real VLLMServer lifecycle with a process tree like vLLM's, an
API server that dies at once on SIGTERM and an engine-core child that does not honour SIGTERM. Each way of
ending the run is applied mid-run, then the API server's pid, the engine's pid and the port are checked.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import REPO, write_yaml

HERE = Path(__file__).parent
GONE_WITHIN_S = 10.0
"""What "within seconds" means here: the in-process stop and the watchdog both need about two."""


def gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie nobody reaped has ended)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def port_closed(port: int) -> bool:
    """True when nothing accepts connections on the loopback port."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) != 0


def wait_until(check, timeout_s: float) -> bool:
    """Poll `check` until it holds or `timeout_s` passes; whether it held."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def kill_leftovers(pids: list[int]) -> None:
    """So a failing test leaves no process behind."""
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


def write_managed_probe(folder: Path) -> Path:
    """A probe long enough to be mid-run when the test acts, on one agent with a managed server (of the folder
    `model`, so the run is started in `folder`)."""
    (folder / "model").mkdir()
    write_yaml(folder / "managed.yaml", {"name": "managed", "backend": "vllm", "model": "model", "timeout_s": 10,
                                         "concurrency": 2})
    (folder / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
    return write_yaml(folder / "probe.yaml", {
        "kind": "probe", "name": "lifecycle", "dataset": "gsm8k", "items": {"limit": 40}, "assistant": "managed.yaml",
        "user": "managed.yaml", "user_modes": ["instructed"], "user_prompt_file": "user.md", "temperatures": [0.0],
        "max_tokens": 16,
    })


class Owner:
    """`testbed run` with the stand-in server, started in a process group of its own (so the test can signal the
    group), its output kept in files."""

    def __init__(self, folder: Path, *flags: str) -> None:
        self.report = folder / "server.json"
        self.output = folder / "owner.log"
        env = {**os.environ, "TESTBED_CACHE": str(folder / "cache"), "PYTHONPATH": str(REPO)}
        with open(self.output, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(HERE / "stand_in_server_owner.py"), str(self.report), *flags, "--",
                 "run", str(write_managed_probe(folder)), "--store", str(folder / "s.sqlite"), "-q", "--no-judge"],
                cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.pids: list[int] = []

    def server(self, mid_run: bool = True) -> dict:
        """The stand-in's pids and port once it listens (and, with `mid_run`, once the run sent it a request)."""
        marker = Path(f"{self.report}.chat") if mid_run else self.report
        assert wait_until(lambda: marker.exists() or self.process.poll() is not None, 60), "the stand-in never started"
        assert self.report.exists(), f"the run ended before its server started:\n{self.output.read_text()}"
        served = json.loads(self.report.read_text())
        self.pids = [served["server"], served["engine"]]
        return served

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        kill_leftovers(self.pids)


@pytest.fixture
def owner(tmp_path):
    started: list[Owner] = []

    def start(*flags: str) -> Owner:
        started.append(Owner(tmp_path, *flags))
        return started[-1]

    yield start
    for each in started:
        each.close()


def assert_gone(served: dict, since: float, owner: Owner) -> None:
    """The API server, its engine and its port are gone within GONE_WITHIN_S of `since`."""
    left = since + GONE_WITHIN_S - time.monotonic()
    assert wait_until(lambda: gone(served["server"]) and gone(served["engine"]) and port_closed(served["port"]), left), (
        f"after {GONE_WITHIN_S:g}s: API server gone {gone(served['server'])}, engine gone {gone(served['engine'])}, "
        f"port closed {port_closed(served['port'])}\n{owner.output.read_text()[-2000:]}"
    )


ENDS = {
    "sigint-to-the-process": lambda pid: os.kill(pid, signal.SIGINT),
    "sigterm-to-the-process": lambda pid: os.kill(pid, signal.SIGTERM),
    "sigint-to-the-group": lambda pid: os.killpg(pid, signal.SIGINT),
    "sigterm-to-the-group": lambda pid: os.killpg(pid, signal.SIGTERM),
    "kill-9": lambda pid: os.kill(pid, signal.SIGKILL),
}


@pytest.mark.parametrize("end", ENDS)
def test_the_managed_server_is_gone_however_the_run_is_stopped(owner, end):
    run = owner()
    served = run.server()
    assert not port_closed(served["port"]) and not gone(served["engine"])
    since = time.monotonic()
    ENDS[end](run.process.pid)
    run.process.wait(timeout=GONE_WITHIN_S + 20)
    assert_gone(served, since, run)
    if end != "kill-9":
        assert run.process.returncode in (130, 143), run.output.read_text()[-2000:]


def test_the_managed_server_is_gone_after_an_unexpected_error(owner):
    run = owner("--fail-mid-run")
    served = run.server(mid_run=False)
    run.process.wait(timeout=GONE_WITHIN_S + 20)
    assert_gone(served, time.monotonic(), run)
    assert run.process.returncode == 1 and "the run failed unexpectedly" in run.output.read_text()


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """VLLMServer in this process with the stand-in's command line; yields (make server, report path)."""
    from testbed.backends import vllm_server

    report = tmp_path / "server.json"
    health = {"status": "200"}
    monkeypatch.setenv("TESTBED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "gpu")
    monkeypatch.setattr(vllm_server.VLLMServer, "command", lambda self: [
        sys.executable, str(HERE / "stand_in_vllm_server.py"), "--port", str(self.port), "--model", self.served_name,
        "--report", str(report), "--health", health["status"]])
    made: list = []

    def make(name: str = "stand-in", *, ready: bool = True):
        health["status"] = "200" if ready else "503"
        made.append(vllm_server.VLLMServer(model_path=name, served_name=name, startup_timeout_s=60))
        return made[-1]

    yield make, report
    for server in made:
        server.stop()
    if report.exists():
        kill_leftovers(list(json.loads(report.read_text()).values())[:2])


def test_stopping_a_server_whose_api_server_died_ends_the_engine_it_left(stand_in):
    make, report = stand_in
    server = make()
    server.start()
    served = json.loads(report.read_text())
    os.kill(served["server"], signal.SIGKILL)
    assert wait_until(lambda: server.process.poll() is not None, 5)
    since = time.monotonic()
    server.stop()
    assert gone(served["engine"]) and time.monotonic() - since < GONE_WITHIN_S


def test_an_interrupt_during_start_up_stops_the_server(stand_in):
    make, report = stand_in
    server = make(ready=False)

    def interrupt_once_listening(*_):
        if report.exists():
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt_once_listening)
    signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
    try:
        with pytest.raises(KeyboardInterrupt):
            server.start()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    served = json.loads(report.read_text())
    assert_gone_in_process(served)


def test_a_stopped_server_dismisses_its_watchdog(stand_in):
    make, report = stand_in
    server = make()
    server.start()
    watchdog = server.watchdog.process
    assert watchdog.poll() is None
    server.stop()
    assert watchdog.poll() is not None and server.watchdog is None
    assert_gone_in_process(json.loads(report.read_text()))


def test_a_model_given_as_a_folder_path_gets_a_log_file(stand_in, tmp_path):
    make, _ = stand_in
    server = make(str(tmp_path / "models" / "mine"))
    server.start()
    assert server.log_path.parent == tmp_path / "cache" / "logs" and server.log_path.name.startswith("vllm-")
    server.stop()


def assert_gone_in_process(served: dict) -> None:
    """The stand-in's API server, engine and port are gone within GONE_WITHIN_S."""
    assert wait_until(lambda: gone(served["server"]) and gone(served["engine"]) and port_closed(served["port"]),
                      GONE_WITHIN_S), f"left running: {served}"
