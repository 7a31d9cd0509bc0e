"""`testbed.judges.human_labels`: a JSONL file of human labels is checked whole, then stored as human:<annotator>."""

from __future__ import annotations

import json

import pytest

from testbed.judges.human_labels import LabelFileError, import_human_labels, parse_human_labels
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import labels_frame
from testbed.transcript import Message

KNOWN = [("e1", 2), ("e1", 4)]


def test_lines_become_label_rows_and_blank_lines_are_skipped():
    text = "\n".join([json.dumps({"episode_id": "e1", "turn_index": 2, "label": "genuine_followup"}), "",
                      json.dumps({"episode_id": "e1", "turn_index": "4", "label": "echo_assistant"})])
    rows = parse_human_labels(text, KNOWN, "run", "f.jsonl")
    assert [(r.episode_id, r.turn_index, r.label, r.followup) for r in rows] == [
        ("e1", 2, "genuine_followup", 1), ("e1", 4, "echo_assistant", 0)]


@pytest.mark.parametrize(("line", "problem"), [
    ("not json", "f.jsonl:1: Expecting value"),
    ('{"episode_id": "e1", "turn_index": 2}', "f.jsonl:1: 'label'; each line needs episode_id, turn_index and a known label"),
    ('{"episode_id": "e1", "turn_index": 2, "label": "great"}', "f.jsonl:1: "),
    ('{"episode_id": "e9", "turn_index": 2, "label": "other"}', "f.jsonl:1: run run has no user turn e9:2"),
])
def test_a_bad_line_is_named_with_its_file_and_number(line, problem):
    with pytest.raises(LabelFileError) as bad:
        parse_human_labels(line, KNOWN, "run", "f.jsonl")
    assert str(bad.value).startswith(problem)


def test_a_file_is_stored_under_the_annotator_on_the_run_a_prefix_names(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.begin_run("run-h", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    key = EpisodeKey("e1", "item", "gsm8k", "a", "am", "u", "um", "instructed", 0.0, 0, "none")
    messages = [Message("user", "What is 2 + 3?", "dataset", 0), Message("assistant", "5", "a", 1), Message("user", "Why?", "u", 2)]
    store.write_episode("run-h", EpisodeOutcome(key, messages, "done", "max_turns"))
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"episode_id": "e1", "turn_index": 2, "label": "genuine_followup"}) + "\n")
    stored = import_human_labels(store, "run-", path, "ann")
    assert (stored.run_id, stored.count) == ("run-h", 1)
    assert (stored.identity.judge, stored.identity.model) == ("human", "ann")
    assert list(labels_frame(store, "run-h", stored.identity).label) == ["genuine_followup"]
    store.close()
