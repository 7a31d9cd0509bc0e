"""One writer per run: the lease, takeover from dead holders, finished episodes never overwritten, read-only opening."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from testbed.store import Store
from testbed.store.lease import LEASE_TTL_S
from testbed.store.sqlite_store import StoreError

from test_sqlite_store import REPO, begin, count, outcome


def test_second_writer_is_refused_naming_the_holder(tmp_path):
    first, second = Store(tmp_path / "s.sqlite"), Store(tmp_path / "s.sqlite")
    first.acquire_lease("run-abc")
    with pytest.raises(StoreError, match=r"run run-abc is being written by process \d+ on host .*heartbeat"):
        second.acquire_lease("run-abc")
    first.release_lease("run-abc")
    second.acquire_lease("run-abc")


def test_lease_of_a_dead_process_is_taken_over(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(proc.stdout)
    with store.conn:
        store.conn.execute("INSERT INTO run_leases VALUES ('run-abc', 'tok', ?, ?, NULL, ?, ?)",
                           (dead_pid, __import__("socket").gethostname(), time.time(), time.time()))
    store.acquire_lease("run-abc")
    assert store.conn.execute("SELECT pid FROM run_leases").fetchone()[0] != dead_pid


def test_stale_heartbeat_on_another_host_is_taken_over(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    old = time.time() - LEASE_TTL_S - 1
    with store.conn:
        store.conn.execute("INSERT INTO run_leases VALUES ('run-abc', 'tok', 1, 'elsewhere', NULL, ?, ?)", (old, old))
    store.acquire_lease("run-abc")
    fresh = time.time()
    with store.conn:
        store.conn.execute("UPDATE run_leases SET host='elsewhere', heartbeat_at=?", (fresh,))
    other = Store(tmp_path / "s.sqlite")
    with pytest.raises(StoreError, match="host elsewhere"):
        other.acquire_lease("run-abc")


def test_a_process_that_lost_its_lease_cannot_write(tmp_path):
    first, second = Store(tmp_path / "s.sqlite"), Store(tmp_path / "s.sqlite")
    begin(first)
    first.acquire_lease("run-abc")
    with first.conn:
        first.conn.execute("UPDATE run_leases SET heartbeat_at=?", (time.time() - LEASE_TTL_S - 1,))
    second.acquire_lease("run-abc")
    with pytest.raises(StoreError, match="lost the lease"):
        first.write_episode("run-abc", outcome("ep-1"))
    assert count(second, "episodes") == 0
    assert second.write_episode("run-abc", outcome("ep-1")) is True


def test_finished_episode_is_never_overwritten(store):
    begin(store)
    assert store.write_episode("run-abc", outcome("ep-1", tag="-first")) is True
    assert store.write_episode("run-abc", outcome("ep-1", status="error", error_reason="HTTP 500")) is False
    assert store.write_episode("run-abc", outcome("ep-1", tag="-second")) is False
    ep = store.conn.execute("SELECT status, error_reason FROM episodes").fetchone()
    assert tuple(ep) == ("done", None)
    contents = [r[0] for r in store.conn.execute("SELECT content FROM messages ORDER BY turn_index")]
    assert contents == ["message 0-first", "message 1-first", "message 2-first"]


def test_run_killed_while_holding_its_lease_reads_as_interrupted(tmp_path):
    path = tmp_path / "store.sqlite"
    script = textwrap.dedent(f"""
        import os
        from testbed.store import Store
        s = Store({str(path)!r})
        s.acquire_lease("run-k")
        s.begin_run("run-k", scenario="s", kind="probe", spec={{}}, fingerprint="f", versions={{}}, git_revision=None, planned=1)
        os.kill(os.getpid(), 9)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    reader = Store(path, readonly=True)
    assert reader.run("run-k")["status"] == "interrupted"
    assert [r["status"] for r in reader.runs()] == ["interrupted"]
    writer = Store(path)
    writer.acquire_lease("run-k")


def test_readonly_store_must_exist_and_is_never_written(tmp_path):
    with pytest.raises(StoreError, match="no store at .*missing.sqlite.*testbed run"):
        Store(tmp_path / "missing.sqlite", readonly=True)
    assert not (tmp_path / "missing.sqlite").exists()
    path = tmp_path / "s.sqlite"
    writer = Store(path)
    begin(writer)
    writer.write_episode("run-abc", outcome("ep-1"))
    writer.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    reader = Store(path, readonly=True)
    assert reader.run("run-abc")["status"] == "running"
    assert reader.done_episode_ids("run-abc") == {"ep-1"}
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.conn.execute("DELETE FROM episodes")
    reader.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_directory_is_not_a_store(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        Store(tmp_path)
