"""`testbed recover`: a store damaged mid-file gives back every row off the damaged page, as a store the testbed opens."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.problems import damaged_message
from testbed.store.recovery import RecoveryError, recover
from testbed.transcript import Message, Usage

RUNS, EPISODES, TURNS = 3, 20, 10


def _episode(run: int, episode: int) -> EpisodeOutcome:
    key = EpisodeKey(episode_id=f"ep-{episode:03d}", item_id=f"item-{episode}", dataset="gsm8k", assistant_agent="a",
                     assistant_model="m-a", user_agent="u", user_model="m-u", user_mode="instructed", temperature=0.0,
                     sample_index=0, perturbation="none")
    messages = [Message(role="user" if t % 2 else "assistant", content=f"run {run} episode {episode} turn {t} " + "x" * 300,
                        speaker="s", turn_index=t, usage=Usage(1, 2, 0.1)) for t in range(TURNS)]
    return EpisodeOutcome(key=key, messages=messages, status="done", usage=Usage(10, 20, 1.0))


def _store_with_damaged_pages(folder: Path, pick) -> Path:
    """A store of three finished runs whose messages table lost the leaf pages `pick(leaves)` chooses (zeroed)."""
    path = folder / "s.sqlite"
    store = Store(path)
    for run in range(RUNS):
        run_id = f"probe-{run}"
        store.begin_run(run_id, scenario="probe", kind="probe", spec={"n": run}, fingerprint=f"fp{run}", versions={},
                        git_revision=None, planned=EPISODES)
        for episode in range(EPISODES):
            store.add_episode(run_id, _episode(run, episode))
        store.commit()
        store.finish_run(run_id, "done")
    store.close()
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        try:
            leaves = [r[0] for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name='messages' AND pagetype='leaf' ORDER BY pageno")]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find a page of the messages table with")
    assert len(leaves) > 20
    with open(path, "r+b") as f:
        for page in pick(leaves):
            f.seek((page - 1) * page_size)
            f.write(b"\x00" * page_size)
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.DatabaseError, match="malformed"):
        conn.execute("SELECT * FROM messages").fetchall()
    return path


@pytest.fixture
def damaged_store(tmp_path) -> Path:
    """A store whose messages table lost one leaf page in the middle of the file."""
    return _store_with_damaged_pages(tmp_path, lambda leaves: [leaves[len(leaves) // 2]])


def test_recover_keeps_every_row_off_the_damaged_page_and_the_copy_opens_as_a_store(damaged_store, tmp_path):
    out = tmp_path / "copy.sqlite"
    done = run_cli("recover", str(damaged_store), str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "messages" in done.stdout and "some rows were lost" in done.stdout
    total = RUNS * EPISODES * TURNS
    with contextlib.closing(Store(out, readonly=True)) as copy:
        kept = copy.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        assert copy.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == RUNS * EPISODES
        assert {r[0] for r in copy.conn.execute("SELECT run_id FROM runs")} == {f"probe-{r}" for r in range(RUNS)}
        assert copy.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    page_rows = 4096 // 300 + 1
    assert total - page_rows <= kept < total, "one page's rows are lost, no more"
    listed = run_cli("runs", "--store", str(out))
    assert listed.returncode == 0, listed.stderr
    assert all(f"probe-{r}" in listed.stdout for r in range(RUNS))


def test_recover_reports_each_tables_kept_and_lost_rows(damaged_store, tmp_path):
    result = recover(damaged_store, tmp_path / "copy.sqlite")
    by_name = {t.name: t for t in result.tables}
    messages = by_name["messages"]
    assert messages.skipped and messages.held == RUNS * EPISODES * TURNS, "counted through the table's intact index"
    assert 0 < messages.lost <= 20 and messages.kept + messages.lost == RUNS * EPISODES * TURNS
    assert by_name["episodes"].kept == RUNS * EPISODES and by_name["episodes"].lost == 0


@pytest.mark.parametrize("pick", [lambda leaves: leaves[:1], lambda leaves: leaves[-1:], lambda leaves: [leaves[3], leaves[-4]]],
                         ids=["first page", "last page", "two pages"])
def test_each_damaged_page_costs_only_its_rows(tmp_path, pick):
    result = recover(_store_with_damaged_pages(tmp_path, pick), tmp_path / "copy.sqlite")
    messages = {t.name: t for t in result.tables}["messages"]
    damaged = len(pick(list(range(1000))))
    assert 0 < messages.lost <= 15 * damaged and messages.kept + messages.lost == RUNS * EPISODES * TURNS
    assert len(messages.skipped) == damaged


def test_recover_never_overwrites_the_target(damaged_store, tmp_path):
    out = tmp_path / "taken.sqlite"
    out.write_text("mine")
    refused = run_cli("recover", str(damaged_store), str(out))
    assert refused.returncode == 2
    assert f"{out} exists" in refused.stderr and "never overwrites" in refused.stderr
    assert out.read_text() == "mine"
    with pytest.raises(RecoveryError, match="exists"):
        recover(damaged_store, out)


def test_the_damaged_store_message_names_testbed_recover(tmp_path):
    message = damaged_message(tmp_path / "s.sqlite", sqlite3.DatabaseError("database disk image is malformed"))
    assert f"testbed recover {tmp_path / 's.sqlite'} {tmp_path / 's-recovered.sqlite'}" in message
    assert "sqlite3 " not in message.replace("(SQLite:", "")

