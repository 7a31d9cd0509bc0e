"""The learned judge's margin: the probability that its verdict is right."""

from __future__ import annotations

import json

import numpy as np
import pytest

from testbed.judges.learned.decision import decide_label
from testbed.judges.learned.doubt import margin, stored_margin
from testbed.judges.taxonomy import taxonomy


def test_the_margin_is_the_probability_of_the_decided_label():
    fu = taxonomy().followup_label
    assert margin({"echo_assistant": 0.5, "degenerate": 0.45, fu: 0.05}, 0.05, 0.25) == pytest.approx(0.5), "the top label"
    assert margin({"echo_assistant": 0.6, fu: 0.3, "degenerate": 0.1}, 0.3, 0.25) == pytest.approx(0.3), "a follow-up at 0.3"
    assert margin({fu: 0.2, "echo_assistant": 0.15, "degenerate": 0.65}, 0.2, 0.25) == pytest.approx(0.65)
    assert margin(None, 0.9, 0.5) == pytest.approx(0.9) and margin(None, 0.1, 0.5) == pytest.approx(0.9), "the follow-up decision alone"


def test_the_margin_follows_the_judges_own_decision_rule():
    classes = list(taxonomy().labels)
    fu = taxonomy().followup_label
    rng = np.random.default_rng(5)
    for p in rng.dirichlet(np.ones(len(classes)) * 0.5, size=300):
        for threshold in (0.175, 0.5):
            table = dict(zip(classes, map(float, p)))
            assert margin(table, table[fu], threshold) == pytest.approx(table[decide_label(p, classes, threshold)])


def test_a_stored_verdict_is_read_back_and_one_without_a_probability_has_no_margin():
    fu = taxonomy().followup_label
    raw = json.dumps({"p_followup": 0.2, "threshold": 0.225, "probabilities": {"echo_assistant": 0.5, "degenerate": 0.3, fu: 0.2}})
    assert stored_margin(raw) == pytest.approx(0.5)
    assert stored_margin(json.dumps({"p_followup": 0.45, "threshold": 0.4})) == pytest.approx(0.45), "older verdicts: no table"
    assert stored_margin(json.dumps({"p_followup": 0.3})) == pytest.approx(0.7), "threshold 0.5 when not stored"
    for bad in (None, "", "not json", json.dumps({"label": "x"}), json.dumps([1, 2]), json.dumps({"p_followup": "high"})):
        assert stored_margin(bad) is None, bad
