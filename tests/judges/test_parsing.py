"""Strict verdict parsing: a verdict or an error, never a guessed label."""

from __future__ import annotations

import pytest

from testbed.judges.parsing import UnparsableVerdict, parse_verdict
from testbed.judges.prompting import verdict_schema
from testbed.judges.taxonomy import LABELS, taxonomy


def test_taxonomy_file_and_constant_agree():
    assert taxonomy().labels == LABELS and len(LABELS) == 8
    assert taxonomy().drift_labels == {"echo_assistant", "meta_planning"}


@pytest.mark.parametrize("reply", ['{"label": "restate_question", "reason": "repeats it"}',
                                   '```json\n{"label": "restate_question", "reason": "repeats it"}\n```',
                                   '  {"label":"restate_question","reason":"repeats it"}\n'])
def test_valid_label_replies(reply):
    v = parse_verdict(reply, "failure_modes")
    assert (v.label, v.followup, v.reason, v.raw) == ("restate_question", False, "repeats it", reply)


def test_followup_label_sets_binary_verdict():
    assert parse_verdict('{"label": "genuine_followup", "reason": ""}', "failure_modes").followup is True


def test_binary_replies():
    v = parse_verdict('{"followup": true, "reason": "asks about step 2"}', "followup")
    assert v.label is None and v.followup is True and v.scored


@pytest.mark.parametrize("reply,task", [
    ("genuine_followup", "failure_modes"),
    ("The label is genuine_followup.", "failure_modes"),
    ('{"label": "good", "reason": "x"}', "failure_modes"),
    ('{"label": "degenerate"} and more', "failure_modes"),
    ('["degenerate"]', "failure_modes"),
    ('{"followup": "yes", "reason": "x"}', "followup"),
    ('{"reason": "x"}', "followup"),
    ('{"label": "degenerate", "reason": 5}', "failure_modes"),
    ("", "followup"),
])
def test_garbled_replies_are_refused(reply, task):
    with pytest.raises(UnparsableVerdict):
        parse_verdict(reply, task)


def test_schemas_list_the_taxonomy():
    assert verdict_schema("failure_modes")["properties"]["label"]["enum"] == list(LABELS)
    assert verdict_schema("followup")["required"] == ["followup", "reason"]
