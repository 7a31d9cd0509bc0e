"""The learned judge's margin: the smaller of its label gap and twice its follow-up distance."""

from __future__ import annotations

import json

import pytest

from testbed.judges.learned.doubt import margin, stored_margin


def test_the_margin_is_the_less_certain_of_the_two_decisions():
    assert margin({"a": 0.5, "b": 0.45, "c": 0.05}, 0.05, 0.25) == pytest.approx(0.05), "label gap 0.05 < 2·0.20"
    assert margin({"a": 0.8, "b": 0.1, "c": 0.1}, 0.26, 0.25) == pytest.approx(0.02), "2·0.01 < label gap 0.7"
    assert margin(None, 0.9, 0.5) == pytest.approx(0.8), "without probabilities, the follow-up distance alone"


def test_a_stored_verdict_is_read_back_and_one_without_a_probability_has_no_margin():
    raw = json.dumps({"p_followup": 0.3, "threshold": 0.225, "probabilities": {"a": 0.4, "b": 0.3, "c": 0.3}})
    assert stored_margin(raw) == pytest.approx(0.1)
    assert stored_margin(json.dumps({"p_followup": 0.45, "threshold": 0.4})) == pytest.approx(0.1), "older verdicts: no table"
    assert stored_margin(json.dumps({"p_followup": 0.9})) == pytest.approx(0.8), "threshold 0.5 when not stored"
    for bad in (None, "", "not json", json.dumps({"label": "x"}), json.dumps([1, 2]), json.dumps({"p_followup": "high"})):
        assert stored_margin(bad) is None, bad
