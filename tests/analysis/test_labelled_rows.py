"""Labelled turns as trainer and scorer read them: the conversation capped as when judging, detached rows rebuilt, a
bad context named, τ² gold turns exported without the request."""

from __future__ import annotations

import json

import pytest

from testbed.analysis.judge_quality import labelled_rows
from testbed.analysis.judge_quality.detached_text import detach_row
from testbed.analysis.judge_quality.judge_eval import read_gold
from testbed.analysis.judge_quality.labelset import split_of
from testbed.analysis.tau2.judge_items import gold_turn_items
from testbed.conversation_context import CONTEXT_MESSAGES
from testbed.specs.errors import SpecError
from testbed.transcript import ASSISTANT, TOOL, USER

ROW = {"id": "r1", "question": "Plan my week of meals, please.", "assistant": "Which foods do you like?",
       "user_turn": "I like rice and beans.", "label": "genuine_followup", "conversation": "run/e1"}


def test_a_row_is_read_with_its_conversation_capped_as_a_judged_turn_is():
    long = [{"role": USER if k % 2 else ASSISTANT, "content": "word " * 400} for k in range(CONTEXT_MESSAGES + 2)]
    item = labelled_rows.judge_input({**ROW, "context": long})
    assert len(item.context) == CONTEXT_MESSAGES + 1 and item.context[0].role == TOOL
    assert all(len(e.text) < 900 for e in item.context)
    assert labelled_rows.group_of(ROW) == "run/e1" and labelled_rows.group_of({**ROW, "conversation": None}) == ROW["question"]


def test_a_row_names_its_scenario_kind_to_the_judge_and_a_row_without_one_names_none():
    assert labelled_rows.judge_input({**ROW, "kind": "dialogue"}).kind == "dialogue"
    assert labelled_rows.judge_input(ROW).kind is None and labelled_rows.judge_input({**ROW, "kind": 3}).kind is None


def test_detached_rows_are_rebuilt_and_others_pass_through(monkeypatch):
    source = "Plan my week of meals, please."
    row = {**ROW, "user_turn": "Plan my week of meals, please. Cheap ones."}
    kept = detach_row(row, source, dataset="sharegpt", item_id="sharegpt-x")
    kept["source"]["selection"] = {"limit": 1}
    assert kept["question"] is None and "Plan my week" not in kept["user_turn"]
    monkeypatch.setattr(labelled_rows, "sharegpt_sources", lambda ids, selection: {i: source for i in ids})
    assert labelled_rows.attached([kept, ROW]) == [{**row, "source": kept["source"]}, ROW]
    with pytest.raises(ValueError, match="selection"):
        labelled_rows.attached([{**kept, "source": {"item_id": "sharegpt-x"}}])


def test_a_gold_file_line_with_a_bad_context_is_named(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({**ROW, "context": "not a list"}) + "\n")
    with pytest.raises(SpecError, match="context"):
        read_gold(path)
    path.write_text(json.dumps({**ROW, "context": [{"role": USER, "content": "earlier"}]}) + "\n")
    (item, label), = read_gold(path)
    assert item.context[0].text == "earlier" and label == "genuine_followup"


def test_the_split_is_by_conversation_and_fixed():
    assert split_of("run/e1") == split_of("run/e1")
    shares = [split_of(f"run/e{k}") == "heldout" for k in range(2000)]
    assert 0.2 < sum(shares) / len(shares) < 0.3


def test_gold_tau2_episodes_give_their_later_user_turns_with_tool_traffic_marked(tmp_path):
    record = {"id": "mock/e1", "split": "dev", "domain": "mock", "task_id": "1", "user_model": "m", "assistant_model": "m",
              "user_mode": "transcript", "temperature": 0.0, "termination": "user_stop", "reward": 1.0, "messages": [
                  {"turn": 1, "role": ASSISTANT, "speaker": "tau2", "content": "Hi! How can I help you today?"},
                  {"turn": 2, "role": USER, "speaker": "m", "content": "I need a task created."},
                  {"turn": 3, "role": ASSISTANT, "speaker": "m", "content": "", "tool_calls": [["c1", "create_task", "{}"]]},
                  {"turn": 4, "role": TOOL, "speaker": "environment", "content": None,
                   "tool_result": {"call_id": "c1", "name": "create_task", "requestor": "assistant", "error": False}},
                  {"turn": 5, "role": ASSISTANT, "speaker": "m", "content": "Done. Anything else?"},
                  {"turn": 6, "role": USER, "speaker": "m", "content": "No, thanks."}]}
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(record) + "\n")
    item, = gold_turn_items(path)
    assert (item["question"], item["assistant"], item["user_turn"], item["kind"]) == (
        "I need a task created.", "Done. Anything else?", "No, thanks.", "tau2")
    assert item["context"] == [{"role": TOOL, "content": "[the assistant used tools (1 call)]"}]
    assert "create_task" not in json.dumps(item)
