"""User-turn training rows are prompted with what the simulated user saw: the spoken messages and its own tool traffic
(in OpenAI chat form), never the system prompt, the assistant's tool calls or their results."""

from __future__ import annotations

import json
from dataclasses import replace

import datasets
import pytest

from testbed.export.training import ExportFilter, training_rows
from testbed.export.user_view import seen_by_user
from testbed.export.writing import write_export
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import write_labels
from testbed.store.records import LabelRow
from tool_episode import (ANSWER, EPISODE, GREETING, JUDGE, MESSAGES, REQUEST, RUN, USER_RESULT, USER_TURN,
                          build_tool_store)

HIDDEN = ("unlimited-", "SYSTEM-ONLY-WORDS", "no such tool", "get_customer_by_phone", "call-1", "call-2")
"""What only the system prompt and the assistant's tool traffic hold."""

SEEN_BEFORE_TURN_9 = [
    {"role": "assistant", "content": GREETING},
    {"role": "user", "content": REQUEST},
    {"role": "assistant", "content": ANSWER},
    {"role": "user", "content": None,
     "tool_calls": [{"id": "call-3", "type": "function", "function": {"name": "toggle_airplane_mode", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call-3", "content": USER_RESULT},
]
FAILED_TURN = "Let me take it from here: as your agent, I will reset the line."


@pytest.fixture
def store(tmp_path):
    """The tool episode labelled follow-ups, plus a copy whose turn 9 is a failure (so the two make a DPO pair)."""
    s = Store(build_tool_store(tmp_path))
    key = EpisodeKey("tool-episode-b", "task-1", "tau2-telecom", "agent", "agent-model", "user", "user-model", "instructed",
                     0.0, 1, "none")
    messages = [*MESSAGES[:9], replace(MESSAGES[9], content=FAILED_TURN), MESSAGES[10]]
    s.write_episode(RUN, EpisodeOutcome(key, messages, "done", "user_stop"))
    write_labels(s, RUN, JUDGE, [LabelRow(key.episode_id, 9, "scored", "echo_assistant", False, "speaks as the agent")])
    yield s
    s.close()


def test_only_what_the_user_saw_counts():
    assert [m.turn_index for m in MESSAGES if seen_by_user(m)] == [1, 2, 6, 7, 8, 9, 10]


def test_sft_rows_hold_spoken_messages_and_the_users_own_tool_traffic(store, tmp_path):
    export = training_rows(store, RUN, "sft", JUDGE)
    rows = {r["turn_index"]: r for r in export.rows if r["episode_id"] == EPISODE}
    assert sorted(rows) == [2, 9] and export.counts["rows"] == 2
    assert rows[2]["messages"] == [{"role": "assistant", "content": GREETING}, {"role": "user", "content": REQUEST}]
    assert rows[9]["messages"] == [*SEEN_BEFORE_TURN_9, {"role": "user", "content": USER_TURN}]
    text = json.dumps(export.rows)
    assert not [h for h in HIDDEN if h in text]
    data, card = write_export(export, ExportFilter(), tmp_path / "out")
    loaded = datasets.load_dataset("json", data_files=str(data), split="train")
    assert len(loaded) == 2 and loaded[1]["messages"][-1]["content"] == USER_TURN
    assert "tool calls" in card.read_text()


def test_dpo_pairs_share_a_context_with_the_users_tool_traffic(store):
    export = training_rows(store, RUN, "dpo", JUDGE)
    assert len(export.rows) == 1
    row = export.rows[0]
    assert row["prompt"] == SEEN_BEFORE_TURN_9
    assert (row["chosen"], row["rejected"]) == ([{"role": "user", "content": USER_TURN}], [{"role": "user", "content": FAILED_TURN}])
    assert not [h for h in HIDDEN if h in json.dumps(row)]
