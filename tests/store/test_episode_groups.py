"""Episodes committed in groups: on size, on time, on close; a failed episode or commit loses nothing else;
a run killed mid-way keeps every committed group and resumes without duplicates."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from helpers import REPO, write_yaml
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import EpisodeOutcome, Store, StoreError
from testbed.store.episode_groups import EpisodeGroups
from testbed.transcript import Message

from test_sqlite_store import begin, key, messages, outcome


def committed(path) -> list[str]:
    """Episode ids another connection can see: what survives this process."""
    with sqlite3.connect(path) as conn:
        return sorted(r[0] for r in conn.execute("SELECT episode_id FROM episodes"))


async def test_a_group_is_committed_when_full_and_by_close(store):
    begin(store)
    groups = EpisodeGroups(store, "run-abc", max_episodes=3, max_delay_s=60)
    for i in range(2):
        assert groups.write(outcome(f"ep-{i}")) is True
    assert committed(store.path) == []
    groups.write(outcome("ep-2"))
    assert committed(store.path) == ["ep-0", "ep-1", "ep-2"]
    groups.write(outcome("ep-3"))
    assert committed(store.path) == ["ep-0", "ep-1", "ep-2"]
    groups.close()
    assert committed(store.path) == ["ep-0", "ep-1", "ep-2", "ep-3"]


async def test_a_lone_episode_is_committed_on_time(store):
    begin(store)
    groups = EpisodeGroups(store, "run-abc", max_episodes=100, max_delay_s=0.02)
    groups.write(outcome("ep-1"))
    assert committed(store.path) == []
    for _ in range(200):
        await asyncio.sleep(0.01)
        if committed(store.path):
            break
    assert committed(store.path) == ["ep-1"], "the timer committed it with no further episode and no close"


async def test_an_episode_that_fails_to_write_leaves_the_rest_of_its_group(store):
    begin(store)
    groups = EpisodeGroups(store, "run-abc", max_episodes=100, max_delay_s=60)
    groups.write(outcome("ep-1"))
    broken = EpisodeOutcome(key=key("ep-2"), status="done",
                            messages=[*messages(2), Message(role="user", content="dup", speaker="x", turn_index=1)])
    with pytest.raises(sqlite3.IntegrityError):
        groups.write(broken)
    groups.write(outcome("ep-3"))
    groups.close()
    assert committed(store.path) == ["ep-1", "ep-3"]
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM messages WHERE episode_id='ep-2'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 6


async def test_a_finished_episode_is_not_written_again_within_a_group(store):
    begin(store)
    groups = EpisodeGroups(store, "run-abc", max_episodes=100, max_delay_s=60)
    assert groups.write(outcome("ep-1", tag="-first")) is True
    assert groups.write(outcome("ep-1", tag="-second")) is False
    groups.close()
    assert [r[0] for r in store.conn.execute("SELECT content FROM messages ORDER BY turn_index")] == [
        "message 0-first", "message 1-first", "message 2-first"]


async def test_a_commit_that_fails_on_the_timer_is_raised_not_lost(store, monkeypatch):
    begin(store)
    groups = EpisodeGroups(store, "run-abc", max_episodes=100, max_delay_s=0.01)
    real_commit = store.commit
    failures = iter([sqlite3.OperationalError("disk I/O error")])

    def commit() -> None:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        real_commit()

    monkeypatch.setattr(store, "commit", commit)
    groups.write(outcome("ep-1"))
    await asyncio.sleep(0.1)
    with pytest.raises(StoreError, match="committing finished episodes of run run-abc failed: disk I/O error"):
        groups.write(outcome("ep-2"))
    groups.close()
    assert committed(store.path) == ["ep-1"], "the group was committed on the next try"


KILLED_MID_GROUP = textwrap.dedent("""
    import asyncio, os, signal, sys
    import testbed.store.episode_groups as groups
    from testbed.backends.scripted import ScriptedBackend
    from testbed.running.runner import run_scenario
    from testbed.specs.loader import load_scenario
    from testbed.store import Store

    spec, store_path, log_path = sys.argv[1:4]
    groups.GROUP_EPISODES, groups.GROUP_DELAY_S = 3, 60.0
    log, pending, commits = open(log_path, "a"), [], [0]
    real_write, real_commit = groups.EpisodeGroups.write, groups.EpisodeGroups.commit

    def write(self, outcome):
        pending.append(outcome.key.episode_id)
        written = real_write(self, outcome)
        if commits[0] == 2 and len(pending) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return written

    def commit(self):
        real_commit(self)
        if pending:
            log.write("".join(e + "\\n" for e in pending))
            log.flush()
            os.fsync(log.fileno())
            pending.clear()
            commits[0] += 1

    groups.EpisodeGroups.write, groups.EpisodeGroups.commit = write, commit
    backend = ScriptedBackend(lambda r: "Why is that?")
    asyncio.run(run_scenario(load_scenario(spec), Store(store_path), backends={"assistant": backend, "user": backend},
                             show_progress=False))
""")


async def test_a_run_killed_mid_group_keeps_every_committed_group_and_resumes_without_duplicates(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": 1})
    spec = write_yaml(tmp_path / "dlg.yaml", {
        "kind": "dialogue", "name": "dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 4},
        "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md",
        "temperatures": [0.7], "samples_per_temperature": 3, "max_tokens": 16, "max_user_turns": 2})
    path, log = tmp_path / "store.sqlite", tmp_path / "committed.txt"
    proc = subprocess.run([sys.executable, "-c", KILLED_MID_GROUP, str(spec), str(path), str(log)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    logged = sorted(log.read_text().split())
    assert len(logged) == 6, "two groups of three were committed before the kill"
    assert committed(path) == logged, "every committed episode survived; the two in the open group did not"
    with sqlite3.connect(path) as conn:
        finished = dict(conn.execute("SELECT episode_id, finished_at FROM episodes").fetchall())

    store = Store(path)
    try:
        summary = await run_scenario(load_scenario(spec), store, backends={"assistant": ScriptedBackend(lambda r: "Why?"),
                                                                           "user": ScriptedBackend(lambda r: "Why?")},
                                     show_progress=False)
        assert (summary.planned, summary.skipped, summary.done) == (12, 6, 12)
        rows = store.conn.execute("SELECT episode_id, finished_at FROM episodes").fetchall()
        assert len(rows) == 12 and len({r[0] for r in rows}) == 12
        assert {r[0]: r[1] for r in rows if r[0] in finished} == finished, "no committed episode was redone"
        duplicated = store.conn.execute("SELECT COUNT(*) FROM (SELECT 1 FROM messages GROUP BY episode_id, turn_index "
                                        "HAVING COUNT(*) > 1)").fetchone()[0]
        assert duplicated == 0
    finally:
        store.close()
