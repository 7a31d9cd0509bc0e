"""`kill -9` of a run at a random moment, then the same command: exact count, no duplicates, nothing redone."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time

import pytest

from helpers import REPO, TESTBED, run_cli, wait_for_episodes

pytestmark = pytest.mark.integration


def count(db: str, sql: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchone()[0]


def test_kill_minus_nine_then_resume(server_agent, tmp_path):
    db = str(tmp_path / "s.sqlite")
    args = ["run", "probe-gsm8k", "--assistant", str(server_agent), "--user", str(server_agent), "--limit", "8", "--store", db, "-q", "--no-report"]
    proc = subprocess.Popen([*TESTBED, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_episodes(db)
    time.sleep(random.uniform(0.0, 3.0))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before = count(db, "SELECT COUNT(*) FROM episodes WHERE status='done'")
    assert 1 <= before < 32, f"the kill should land mid-run, {before} of 32 were done"
    with sqlite3.connect(db) as conn:
        finished = dict(conn.execute("SELECT episode_id, finished_at FROM episodes WHERE status='done'").fetchall())

    resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{before} already finished" in resumed.stdout
    assert count(db, "SELECT COUNT(*) FROM episodes") == 32
    assert count(db, "SELECT COUNT(DISTINCT episode_id) FROM episodes") == 32
    assert count(db, "SELECT COUNT(*) FROM messages") == 32 * 3
    assert count(db, "SELECT COUNT(*) FROM (SELECT 1 FROM messages GROUP BY episode_id, turn_index HAVING COUNT(*) > 1)") == 0
    with sqlite3.connect(db) as conn:
        after = dict(conn.execute("SELECT episode_id, finished_at FROM episodes").fetchall())
    assert {k: after[k] for k in finished} == finished, "episodes finished before the kill were not redone"
