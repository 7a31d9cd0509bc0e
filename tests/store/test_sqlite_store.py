"""The SQLite store: WAL, resumable runs, atomic per-episode writes, and durability across a SIGKILL."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from testbed.store import EpisodeKey, EpisodeOutcome, SharedAnswer, Store
from testbed.store.schema import SCHEMA_VERSION
from testbed.store.sqlite_store import StoreError, message_from_row
from testbed.transcript import Message, Usage

REPO = Path(__file__).resolve().parents[2]


def key(episode_id: str = "ep-1", **changes) -> EpisodeKey:
    fields = dict(episode_id=episode_id, item_id="item-1", dataset="gsm8k", assistant_agent="a", assistant_model="m-a",
                  user_agent="u", user_model="m-u", user_mode="raw", temperature=0.0, sample_index=0, perturbation="none")
    fields.update(changes)
    return EpisodeKey(**fields)


def messages(n: int = 3, tag: str = "") -> list[Message]:
    roles = ["system", "user", "assistant"]
    return [
        Message(role=roles[i % 3] if i else "system", content=f"message {i}{tag}", speaker=f"s{i}", turn_index=i,
                sampling={"temperature": 0.5} if i else None, usage=Usage(i, 2 * i, 0.25 * i),
                finish_reason="stop" if i else None, reused_from="ans-1" if i == 2 else None)
        for i in range(n)
    ]


def outcome(episode_id: str = "ep-1", status: str = "done", n: int = 3, tag: str = "", **kw) -> EpisodeOutcome:
    return EpisodeOutcome(key=key(episode_id), messages=messages(n, tag), status=status, usage=Usage(10, 20, 1.5), **kw)


def begin(store: Store, run_id: str = "run-abc", fingerprint: str = "fp1", planned: int = 4) -> bool:
    return store.begin_run(run_id, scenario="probe-x", kind="probe", spec={"name": "probe-x", "n": 1},
                           fingerprint=fingerprint, versions={"testbed": "0.1.0"}, git_revision="deadbeef", planned=planned)


def count(store: Store, table: str, run_id: str = "run-abc") -> int:
    return store.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id=?", (run_id,)).fetchone()[0]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "store.sqlite")
    yield s
    s.close()


def test_wal_mode_is_on(store, tmp_path):
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other = sqlite3.connect(tmp_path / "store.sqlite")
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    finally:
        other.close()


def test_store_creates_parent_folders(tmp_path):
    s = Store(tmp_path / "a" / "b" / "store.sqlite")
    try:
        assert (tmp_path / "a" / "b" / "store.sqlite").is_file()
    finally:
        s.close()


def test_begin_run_creates_then_resumes(store):
    assert begin(store, planned=4) is False
    store.finish_run("run-abc", "interrupted")
    assert store.run("run-abc")["status"] == "interrupted"
    assert store.run("run-abc")["finished_at"] is not None
    assert begin(store, planned=6) is True
    row = store.run("run-abc")
    assert row["status"] == "running"
    assert row["finished_at"] is None
    assert row["planned_episodes"] == 6
    assert row["spec"] == {"name": "probe-x", "n": 1}
    assert row["versions"] == {"testbed": "0.1.0"}
    assert row["git_revision"] == "deadbeef"
    assert store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_begin_run_refuses_different_fingerprint(store):
    begin(store, fingerprint="fp1")
    with pytest.raises(StoreError, match="run-abc"):
        begin(store, fingerprint="fp2")
    assert store.run("run-abc")["fingerprint"] == "fp1"


def test_write_episode_writes_episode_and_messages(store):
    begin(store)
    store.write_episode("run-abc", outcome(termination="user_turn", task_score=1.0))
    ep = store.conn.execute("SELECT * FROM episodes WHERE run_id='run-abc'").fetchone()
    assert ep["episode_id"] == "ep-1" and ep["status"] == "done"
    assert ep["termination"] == "user_turn" and ep["task_score"] == 1.0
    assert (ep["prompt_tokens"], ep["completion_tokens"], ep["latency_s"]) == (10, 20, 1.5)
    assert (ep["dataset"], ep["user_mode"], ep["perturbation"]) == ("gsm8k", "raw", "none")
    rows = store.conn.execute("SELECT * FROM messages WHERE run_id='run-abc' ORDER BY turn_index").fetchall()
    assert [message_from_row(r) for r in rows] == messages(3)


def test_rewriting_an_episode_replaces_it(store):
    begin(store)
    store.write_episode("run-abc", outcome(status="error", n=3, error_reason="HTTP 500"))
    store.write_episode("run-abc", outcome(status="done", n=2, tag="-v2"))
    assert count(store, "episodes") == 1
    assert count(store, "messages") == 2
    ep = store.conn.execute("SELECT status, error_reason FROM episodes").fetchone()
    assert (ep["status"], ep["error_reason"]) == ("done", None)
    contents = [r[0] for r in store.conn.execute("SELECT content FROM messages ORDER BY turn_index")]
    assert contents == ["message 0-v2", "message 1-v2"]


def test_failed_write_leaves_previous_attempt_intact(store):
    begin(store)
    store.write_episode("run-abc", outcome(status="error", n=3, error_reason="HTTP 500"))
    broken = EpisodeOutcome(key=key("ep-1"), status="done",
                            messages=[*messages(2, "-new"), Message(role="user", content="dup", speaker="x", turn_index=1)])
    with pytest.raises(sqlite3.IntegrityError):
        store.write_episode("run-abc", broken)
    assert count(store, "episodes") == 1
    contents = [r[0] for r in store.conn.execute("SELECT content FROM messages ORDER BY turn_index")]
    assert contents == ["message 0", "message 1", "message 2"]


def test_failed_write_of_new_episode_leaves_nothing(store):
    begin(store)
    with pytest.raises(sqlite3.IntegrityError):
        store.write_episode("run-abc", outcome(status="bogus"))
    assert count(store, "episodes") == 0
    assert count(store, "messages") == 0


def test_done_episode_ids_only_done(store):
    begin(store)
    begin(store, run_id="run-other")
    store.write_episode("run-abc", outcome("ep-1", "done"))
    store.write_episode("run-abc", outcome("ep-2", "error", error_reason="timeout"))
    store.write_episode("run-abc", outcome("ep-3", "done"))
    store.write_episode("run-other", outcome("ep-9", "done"))
    assert store.done_episode_ids("run-abc") == {"ep-1", "ep-3"}
    store.write_episode("run-abc", outcome("ep-2", "done"))
    assert store.done_episode_ids("run-abc") == {"ep-1", "ep-2", "ep-3"}
    assert store.done_episode_ids("run-unknown") == set()


def test_shared_answers_round_trip(store):
    begin(store)
    msg = Message(role="assistant", content="The answer is 4.", speaker="a", turn_index=1,
                  sampling={"temperature": 0.0, "max_tokens": 96}, usage=Usage(12, 7, 0.4), finish_reason="stop")
    store.write_shared_answer("run-abc", SharedAnswer("ans-1", "item-1", msg, 1.0))
    store.write_shared_answer("run-abc", SharedAnswer("ans-2", "item-2", msg, None))
    answers = store.shared_answers("run-abc")
    assert set(answers) == {"ans-1", "ans-2"}
    a = answers["ans-1"]
    assert a.item_id == "item-1" and a.message.content == "The answer is 4."
    assert a.task_score == 1.0 and answers["ans-2"].task_score is None
    u = a.message.usage
    assert (u.prompt_tokens, u.completion_tokens, u.latency_s, a.message.finish_reason) == (12, 7, 0.4, "stop")
    assert a.message.sampling["max_tokens"] == 96
    store.write_shared_answer("run-abc", SharedAnswer("ans-1", "item-1", msg, 0.0))
    assert len(store.shared_answers("run-abc")) == 2
    assert store.shared_answers("run-abc")["ans-1"].task_score == 0.0
    assert store.shared_answers("run-other") == {}


def test_run_by_unique_prefix(store):
    begin(store, run_id="probe-gsm8k-aaaa11")
    begin(store, run_id="probe-gsm8k-bbbb22")
    assert store.run("probe-gsm8k-a")["run_id"] == "probe-gsm8k-aaaa11"
    assert store.run("probe-gsm8k-bbbb22")["run_id"] == "probe-gsm8k-bbbb22"


def test_run_exact_id_wins_over_prefix(store):
    begin(store, run_id="run-1")
    begin(store, run_id="run-10")
    assert store.run("run-1")["run_id"] == "run-1"


def test_run_unknown_lists_known(store):
    begin(store, run_id="run-one")
    begin(store, run_id="run-two")
    with pytest.raises(StoreError) as info:
        store.run("zzz")
    message = str(info.value)
    assert "not in the store" in message
    assert "run-one" in message and "run-two" in message


def test_run_ambiguous_lists_known(store):
    begin(store, run_id="run-one")
    begin(store, run_id="run-two")
    with pytest.raises(StoreError) as info:
        store.run("run-")
    message = str(info.value)
    assert "ambiguous" in message
    assert "run-one" in message and "run-two" in message


def test_run_prefix_treats_like_wildcards_literally(store):
    begin(store, run_id="probe_a-111")
    begin(store, run_id="probeXa-222")
    begin(store, run_id="p%q-333")
    assert store.run("probe_a")["run_id"] == "probe_a-111"
    with pytest.raises(StoreError, match="not in the store"):
        store.run("%")


def test_runs_counts_done_and_errors(store):
    begin(store, run_id="run-old")
    time.sleep(0.01)
    begin(store, run_id="run-new")
    store.write_episode("run-old", outcome("e1", "done"))
    store.write_episode("run-old", outcome("e2", "done"))
    store.write_episode("run-old", outcome("e3", "error", error_reason="x"))
    by_id = {r["run_id"]: r for r in store.runs()}
    assert (by_id["run-old"]["done"], by_id["run-old"]["errors"]) == (2, 1)
    assert (by_id["run-new"]["done"], by_id["run-new"]["errors"]) == (0, 0)
    assert by_id["run-old"]["planned_episodes"] == 4
    assert [r["run_id"] for r in store.runs()] == ["run-new", "run-old"]


def test_other_schema_version_refused(tmp_path):
    path = tmp_path / "store.sqlite"
    s = Store(path)
    with s.conn:
        s.conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    s.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        Store(path)


def test_other_schema_with_different_tables_refused_untouched(tmp_path):
    path = tmp_path / "future.sqlite"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '99')")
        conn.execute("CREATE TABLE episodes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    with pytest.raises(StoreError, match=str(path)):
        Store(path)
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"meta", "episodes"}


def test_data_survives_close_and_reopen(tmp_path):
    path = tmp_path / "store.sqlite"
    s = Store(path)
    begin(s)
    s.write_episode("run-abc", outcome("ep-1"))
    s.write_shared_answer("run-abc", SharedAnswer("ans-1", "item-1", messages(3)[2], 0.5))
    s.close()
    reopened = Store(path)
    try:
        assert reopened.done_episode_ids("run-abc") == {"ep-1"}
        assert reopened.shared_answers("run-abc")["ans-1"].task_score == 0.5
        rows = reopened.conn.execute("SELECT * FROM messages ORDER BY turn_index").fetchall()
        assert [message_from_row(r) for r in rows] == messages(3)
        assert begin(reopened) is True
    finally:
        reopened.close()


def test_episode_survives_sigkill_right_after_write(tmp_path):
    path = tmp_path / "store.sqlite"
    script = textwrap.dedent(f"""
        import os
        from testbed.store import EpisodeKey, EpisodeOutcome, Store
        from testbed.transcript import Message, Usage
        s = Store({str(path)!r})
        s.begin_run("run-k", scenario="s", kind="probe", spec={{}}, fingerprint="f", versions={{}}, git_revision=None, planned=1)
        key = EpisodeKey("ep-k", "item", "gsm8k", "a", "ma", "u", "mu", "raw", 1.0, 0, "none")
        msgs = [Message("user", "question", "u", 0), Message("assistant", "answer", "a", 1, usage=Usage(3, 4, 0.5))]
        s.write_episode("run-k", EpisodeOutcome(key, msgs, "done", usage=Usage(3, 4, 0.5)))
        os.kill(os.getpid(), 9)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    wal = Path(f"{path}-wal")
    assert wal.is_file() and wal.stat().st_size > 0
    s = Store(path)
    try:
        assert s.done_episode_ids("run-k") == {"ep-k"}
        rows = s.conn.execute("SELECT role, content FROM messages WHERE run_id='run-k' ORDER BY turn_index").fetchall()
        assert [tuple(r) for r in rows] == [("user", "question"), ("assistant", "answer")]
        assert s.run("run-k")["status"] == "running"
    finally:
        s.close()


def test_a_current_version_store_missing_a_table_gets_it_on_a_writing_open(tmp_path):
    path = tmp_path / "store.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE failed_attempts")
    reader = Store(path, readonly=True)
    assert not reader.has_table("failed_attempts")
    reader.close()
    assert Store(path).has_table("failed_attempts")
