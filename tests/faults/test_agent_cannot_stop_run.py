"""An agent cannot stop the run: a python agent raising CancelledError, SystemExit(3), KeyboardInterrupt, GeneratorExit
or a BaseException of its own makes each of its episodes an error naming it, and `testbed run` goes on to its end: it
prints its summary and exits 1 as any run with errored episodes does (`incomplete`: rerun it to redo them), where a
CancelledError used to stop the run with rc 130 and SystemExit(3) to exit with rc 3 and no message. Ctrl-C still stops
the run (rc 130, "interrupted"), and what finished is kept."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess

import pytest

from fault_specs import episodes
from helpers import REPO, TESTBED, wait_for_episodes, write_yaml

ENV = {**os.environ, "COLUMNS": "200",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "tests"), os.environ.get("PYTHONPATH")]))}
"""The CLI's environment, with the tests folder importable (the agents live in tests/hostile_agents.py)."""
INCOMPLETE = 1
"""`testbed run`'s exit status for a run that ended with errored episodes (status `incomplete`)."""


def dialogue_with(folder, target: str, options: dict | None = None, items: int = 2, concurrency: int = 16) -> str:
    """A GSM8K dialogue whose assistant is the python agent `target` (at most `concurrency` turns at once) and whose
    user is scripted."""
    write_yaml(folder / "mine.yaml", {"name": "mine", "backend": "python", "callable": target, "options": options or {},
                                      "timeout_s": 5, "concurrency": concurrency})
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["Go on."]})
    (folder / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    return str(write_yaml(folder / "d.yaml", {
        "kind": "dialogue", "name": "agent-stops", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": items},
        "assistant": "mine.yaml", "user": "scripted.yaml", "user_modes": ["instructed"], "user_prompt_file": "user.md",
        "temperatures": [0.0], "max_tokens": 16, "max_user_turns": 3, "end_marker": "[[END]]"}))


def interruptible() -> None:
    """SIGINT's default in the child, as a terminal gives it: a test run started in the background of a non-interactive
    shell ignores SIGINT, and a child inherits that, so a SIGINT test would test nothing there."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def start(spec: str, store) -> subprocess.Popen:
    return subprocess.Popen([*TESTBED, "run", spec, "--store", str(store), "-q", "--no-judge", "--no-report"], cwd=REPO,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)


@pytest.mark.parametrize("what, raised", [
    ("cancelled", "raised CancelledError"),
    ("exit", "raised SystemExit: 3"),
    ("interrupt", "raised KeyboardInterrupt"),
    ("generator_exit", "raised GeneratorExit"),
    ("own", "raised AgentsOwnBaseException: the agent's own"),
])
def test_whatever_a_python_agent_raises_is_each_episodes_error_and_the_run_goes_on_to_its_end(what, raised, tmp_path):
    store = tmp_path / "s.sqlite"
    run = start(dialogue_with(tmp_path, "hostile_agents:Raising", {"what": what}), store)
    out, err = run.communicate(timeout=120)
    assert run.returncode == INCOMPLETE, out + err
    assert "0/2 episodes done, 2 errors, 0 already finished before this invocation (incomplete)" in out, out + err
    assert "Traceback" not in out + err and not err.strip()
    reasons = [reason for status, reason, _ in episodes(store).values()]
    assert reasons == [f"agent mine (hostile_agents:Raising) {raised}"] * 2


def test_an_agent_exiting_in_its_constructor_is_each_episodes_error(tmp_path):
    store = tmp_path / "s.sqlite"
    run = start(dialogue_with(tmp_path, "hostile_agents:ExitsWhenBuilt"), store)
    out, err = run.communicate(timeout=120)
    assert run.returncode == INCOMPLETE and "0/2 episodes done, 2 errors" in out, out + err
    assert {reason for _, reason, _ in episodes(store).values()} == {
        "agent mine (hostile_agents:ExitsWhenBuilt) could not be built: SystemExit: 3"}


def test_a_real_sigint_still_stops_the_run_and_keeps_what_finished(tmp_path):
    store = tmp_path / "s.sqlite"
    run = start(dialogue_with(tmp_path, "hostile_agents:SlowTalker", {"delay_s": 0.3}, items=20, concurrency=1), store)
    wait_for_episodes(str(store), 1, timeout_s=60)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=30)
    assert run.returncode == 130, out + err
    assert "interrupted" in err and "Traceback" not in out + err
    with sqlite3.connect(store) as conn:
        (status,) = conn.execute("SELECT status FROM runs").fetchone()
        kept = conn.execute("SELECT COUNT(*) FROM episodes WHERE status='done'").fetchone()[0]
    assert status == "interrupted" and 1 <= kept < 20


def test_an_oversized_python_agent_reply_is_its_episodes_error_and_is_not_stored(tmp_path):
    store = tmp_path / "s.sqlite"
    run = start(dialogue_with(tmp_path, "hostile_agents:Verbose", {"megabytes": 10}), store)
    out, err = run.communicate(timeout=120)
    assert run.returncode == INCOMPLETE and "0/2 episodes done, 2 errors" in out, out + err
    assert {reason for _, reason, _ in episodes(store).values()} == {
        "agent mine (hostile_agents:Verbose) returned 10.0 MB of text, over max_reply_bytes (8,388,608 bytes): "
        "return less, or raise max_reply_bytes in its spec"}
    assert store.stat().st_size < 2 * 1024 ** 2, "the 10 MB text was never stored"
