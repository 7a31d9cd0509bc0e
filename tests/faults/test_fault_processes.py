"""Processes against one run: a second writer is refused, SIGTERM and kill -9 leave an interrupted run that resumes."""

from __future__ import annotations

import os
import signal
import subprocess

from fault_server import FaultServer, ok
from fault_specs import episodes, write_probe
from helpers import REPO, TESTBED, run_cli, wait_for_episodes

SLOW = ok("Why did you add those numbers?", delay_s=0.3)


def start_run(spec, store) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen([*TESTBED, "run", str(spec), "--store", str(store), "-q"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def started_with_one_episode(tmp_path, server: FaultServer):
    """A slow three-item run in another process, once its first episode is stored: (spec, store, process)."""
    store = tmp_path / "s.sqlite"
    spec = write_probe(tmp_path, server.base_url, items=3, concurrency=1)
    process = start_run(spec, store)
    wait_for_episodes(str(store), 1, timeout_s=60)
    return spec, store, process


def test_a_second_process_on_the_same_run_is_refused_and_changes_nothing(tmp_path):
    with FaultServer(lambda r: SLOW) as server:
        spec, store, first = started_with_one_episode(tmp_path, server)
        snapshot = episodes(store)
        second = run_cli("run", str(spec), "--store", str(store), "-q", timeout=60)
        out, err = first.communicate(timeout=120)
        requests = server.chat_count()
    assert second.returncode == 2
    assert f"is being written by process {first.pid} on host" in second.stderr
    assert "Traceback" not in second.stderr + second.stdout
    assert first.returncode == 0, out + err
    after = episodes(store)
    assert all(after[e] == v for e, v in snapshot.items() if v[0] == "done")
    assert len(after) == 6 and all(v[0] == "done" for v in after.values())
    assert requests == 3 + 6, "no request was made twice"


def test_sigterm_records_an_interrupted_run_that_resumes(tmp_path):
    with FaultServer(lambda r: SLOW) as server:
        spec, store, run = started_with_one_episode(tmp_path, server)
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
        assert run.returncode == 143, out + err
        assert "terminated (SIGTERM)" in err and "Traceback" not in out + err
        listed = run_cli("runs", "--store", str(store))
        assert "interrupted" in listed.stdout
        kept = episodes(store)
        again = run_cli("run", str(spec), "--store", str(store), "-q", timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    after = episodes(store)
    assert len(after) == 6 and all(after[e] == v for e, v in kept.items() if v[0] == "done")


def test_kill_9_leaves_a_run_listed_as_interrupted_and_a_rerun_takes_over_at_once(tmp_path):
    with FaultServer(lambda r: SLOW) as server:
        spec, store, run = started_with_one_episode(tmp_path, server)
        run.kill()
        run.communicate(timeout=30)
        listed = run_cli("runs", "--store", str(store))
        assert "interrupted" in listed.stdout and "running" not in listed.stdout
        again = run_cli("run", str(spec), "--store", str(store), "-q", timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(episodes(store)) == 6


def test_kill_9_keeps_all_but_a_few_seconds_of_the_invocations_wall_and_cpu_time(tmp_path):
    import sqlite3
    import time

    with FaultServer(lambda r: SLOW) as server:
        store = tmp_path / "s.sqlite"
        run = start_run(write_probe(tmp_path, server.base_url, items=40, concurrency=1), store)
        wait_for_episodes(str(store), 1, timeout_s=60)
        started = time.monotonic()
        while time.monotonic() - started < 11:
            assert run.poll() is None, run.communicate()
            time.sleep(0.2)
        run.kill()
        run.communicate(timeout=30)
    with sqlite3.connect(store) as conn:
        wall, cpu = conn.execute("SELECT wall_s, client_cpu_s FROM run_frameworks").fetchone()
    assert wall >= 10, "the time booked every heartbeat (5 s) before the kill is kept"
    assert cpu > 0
