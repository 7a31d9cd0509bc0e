"""`RunFrames`: one run's frames read once each, equal to what the frame readers give, shared across judges."""

from __future__ import annotations

import pandas as pd
import pytest

import test_frames
from test_frames import LLM, LOCAL, RUN
from testbed.store.frames import TURN_COLUMNS, episodes_df, labels_df, messages_df, turns_df
from testbed.store import Store
from testbed.store.run_frames import FAULT_COLUMNS, REWARD_COLUMNS, RunFrames

filled = test_frames.filled


@pytest.fixture
def counted(filled):
    """The store and the list of SQL statements it runs from now on."""
    statements: list[str] = []
    filled.conn.set_trace_callback(statements.append)
    yield filled, statements
    filled.conn.set_trace_callback(None)


def test_each_frame_equals_its_reader_and_is_read_once(counted):
    store, statements = counted
    frames = RunFrames(store, RUN, LOCAL)
    pd.testing.assert_frame_equal(frames.episodes, episodes_df(store, RUN, exact=True))
    pd.testing.assert_frame_equal(frames.messages, messages_df(store, RUN, exact=True))
    pd.testing.assert_frame_equal(frames.turns, turns_df(store, RUN, exact=True))
    pd.testing.assert_frame_equal(frames.judged_turns, turns_df(store, RUN, LOCAL, exact=True))
    labels = labels_df(store, RUN, LOCAL, exact=True)[frames.labels.columns]
    pd.testing.assert_frame_equal(frames.labels, labels)
    assert [tuple(k) for k in store.turn_keys(RUN)] == list(frames.turn_keys.itertuples(index=False, name=None))
    assert frames.run.run_id == RUN
    before = len(statements)
    for _ in range(3):
        frames.episodes, frames.messages, frames.turns, frames.judged_turns, frames.labels, frames.turn_keys, frames.run
    assert len(statements) == before, "asked again, nothing is read again"


def test_a_caller_adding_a_column_leaves_the_next_callers_frame_alone(filled):
    frames = RunFrames(filled, RUN)
    first = frames.episodes
    first["scratch"] = 1
    assert "scratch" not in frames.episodes


def test_another_judge_shares_the_run_but_not_the_labels(counted):
    store, statements = counted
    local = RunFrames(store, RUN, LOCAL)
    local.turns, local.labels
    before = len(statements)
    llm = local.with_judge(LLM)
    assert llm.turns is not None and len(statements) == before, "the turns are shared"
    assert llm.labels.label.tolist() == ["restate_question"] and len(statements) > before
    assert local.with_judge(LOCAL) is local and local.labels.label.notna().sum() == 3


def test_without_a_judge_or_a_run_the_frames_are_empty_with_their_columns(filled):
    bare = RunFrames(filled, RUN)
    assert bare.labels.empty and "label" in bare.labels and list(bare.judged_turns.columns) == list(bare.turns.columns)
    missing = RunFrames(filled, "probe-not-there")
    assert missing.run is None and missing.kind is None and missing.episodes.empty and missing.turns.empty
    assert list(missing.rewards.columns) == REWARD_COLUMNS and list(missing.faults.columns) == FAULT_COLUMNS
    assert RunFrames(filled, RUN).kind == "dialogue"


def test_turns_taken_from_the_messages_are_the_stores_turns_for_every_shape(tmp_path, store):
    from test_large_run_reads import RUN as BIG, filled as big
    from tool_episode import RUN as TOOLS, build_tool_store

    big(store)
    tools = Store(build_tool_store(tmp_path))
    for db, run in ((store, BIG), (tools, TOOLS)):
        given = RunFrames(db, run).turns[TURN_COLUMNS]
        read = [(t.episode_id, t.turn_index, t.question, t.answer, t.user_turn) for t in db.turns(run, include_errored=True)]
        assert list(given.itertuples(index=False, name=None)) == read and len(read) > 1
