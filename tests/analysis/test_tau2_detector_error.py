"""A detector's turn-level error on a hand-made lab: known true and false positives and negatives give the known
precision, recall and F1, their intervals hold them, and the clean-episode rates count what they should."""

from __future__ import annotations

import pandas as pd
import pytest

from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.detector_error import clean_rates, cross_table, episode_counts, target_table

TURNS = pd.DataFrame([("e1", "airline", 2, "invented_fact"), ("e1", "airline", 4, ""),
                      ("e2", "airline", 2, ""), ("e2", "airline", 4, ""),
                      ("e3", "retail", 2, ""), ("e3", "retail", 4, "invented_fact"),
                      ("e4", "retail", 2, "near_agent_said_first"), ("e4", "retail", 4, "")],
                     columns=["episode_id", "domain", "turn_index", "planted"])
FLAGS = pd.DataFrame([("e1", 2, "invented_fact"), ("e1", 2, "invented_fact"), ("e2", 4, "invented_fact"),
                      ("e4", 2, "invented_fact"), ("e1", 4, "role_drift")], columns=["episode_id", "turn_index", "kind"])
TARGET = {"invented_fact": (lambda planted: planted == "invented_fact", lambda kind: kind == "invented_fact")}


def test_one_hit_two_false_flags_and_one_miss_give_a_third_a_half_and_f1_two_fifths():
    counts = episode_counts(TURNS, FLAGS, *TARGET["invented_fact"])
    assert counts.loc["e1"].tolist() == [1, 0, 0], "a turn flagged twice counts once"
    assert counts.loc["e3"].tolist() == [0, 0, 1] and counts.loc["e4"].tolist() == [0, 1, 0]
    table = target_table(TURNS, FLAGS, TARGET, seed=0).set_index("domain")
    row = table.loc["all"]
    assert (row.tp, row.fp, row.fn) == (1, 2, 1)
    assert row.precision == pytest.approx(1 / 3) and row.recall == pytest.approx(1 / 2) and row.f1 == pytest.approx(0.4)
    assert (row.precision_low, row.precision_high) == pytest.approx(wilson_interval(1, 3))
    assert (row.recall_low, row.recall_high) == pytest.approx(wilson_interval(1, 2))
    assert 0 <= row.f1_low <= row.f1_high <= 1
    assert (table.loc["airline", "tp"], table.loc["airline", "fp"], table.loc["retail", "fn"]) == (1, 1, 1)


def test_the_cross_table_and_the_clean_rates_count_turns_and_episodes():
    cross = cross_table(TURNS, FLAGS, ["invented_fact", "role_drift"])
    assert cross.loc["clean"].tolist() == [5, 1, 1] and cross.loc["invented_fact"].tolist() == [2, 1, 0]
    rates = clean_rates(TURNS, FLAGS, {"e2"})
    assert (rates["episodes"], rates["turns"], rates["flagged_episodes"], rates["flags"]) == (1, 2, 1, 1)
    assert rates["flags_per_turn"] == 0.5 and rates["flagged_share"] == 1.0
