"""`compare` books an invocation's time from its first second: one killed with SIGKILL after two seconds keeps them."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

from fault_server import FaultServer, ok
from fault_specs import write_probe
from helpers import REPO, TESTBED, run_cli


def _booked_wall(store) -> float:
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT wall_s FROM run_frameworks").fetchone()[0]


def _compare_in_its_first_seconds(spec, store, server: FaultServer, seconds: float) -> subprocess.Popen:
    """A `testbed compare` in another process, `seconds` after its first request reached the server."""
    command = [*TESTBED, "compare", str(spec), "--frameworks", "native", "--store", str(store), "-q", "-f", "json"]
    compare = subprocess.Popen(command, cwd=REPO, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while server.chat_count() == 0:
        assert compare.poll() is None, compare.communicate()
        assert time.monotonic() < deadline, "the compare never reached the server"
        time.sleep(0.05)
    time.sleep(seconds)
    return compare


def test_a_compare_killed_in_its_first_seconds_keeps_its_wall_time(tmp_path):
    slow = [True]
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why is that?", delay_s=0.5 if slow[0] else 0.0)) as server:
        spec = write_probe(tmp_path, server.base_url, items=4, temperatures=(0.0,), concurrency=1)
        compare = _compare_in_its_first_seconds(spec, store, server, 2.5)
        assert compare.poll() is None, "still in its first seconds"
        compare.kill()
        compare.communicate(timeout=30)
        booked = _booked_wall(store)
        assert booked >= 1.0, f"the killed invocation's first seconds are booked (got {booked:.2f} s)"
        slow[0] = False
        again = run_cli("compare", str(spec), "--frameworks", "native", "--store", str(store), "-q", "-f", "json", timeout=180)
    assert again.returncode == 0, again.stdout + again.stderr
    native = json.loads(again.stdout)["frameworks"][0]
    assert native["framework"] == "native" and native["wall_s"] >= booked > 0


def test_a_compare_stopped_with_sigterm_in_its_first_second_books_its_time(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why is that?", delay_s=0.5)) as server:
        spec = write_probe(tmp_path, server.base_url, items=4, temperatures=(0.0,), concurrency=1)
        compare = _compare_in_its_first_seconds(spec, store, server, 0.6)
        compare.send_signal(signal.SIGTERM)
        out, err = compare.communicate(timeout=60)
    assert compare.returncode != 0 and "Traceback" not in out + err
    assert _booked_wall(store) >= 0.5
