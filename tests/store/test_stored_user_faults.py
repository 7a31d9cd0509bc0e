"""Stored simulated-user faults: written once per detector and episode, read back in turn order with the detector's
identity, a judge's faults only for that judge, and a version 6 store gaining the tables with its rows kept."""

from __future__ import annotations

import sqlite3

from testbed.store import Store
from testbed.store.records import JudgeIdentity
from testbed.store.schema import SCHEMA_VERSION
from testbed.store.user_faults import FAULT_COLUMNS, FaultRow, checked_episodes, fault_detectors, faults_df, write_faults

RULES = JudgeIdentity("tau2-user-faults", "1")
RULES_2 = JudgeIdentity("tau2-user-faults", "2")
JUDGE = JudgeIdentity("local", "v1", "m")
OTHER = JudgeIdentity("local", "v1", "n")


def test_rule_faults_round_trip_in_turn_order_with_the_detectors_identity(store):
    write_faults(store, "r", RULES, ["e2", "e1", "e3"], [FaultRow("e2", 5, "premature_stop", "undone: x"),
                                                        FaultRow("e1", 3, "invented_fact", "ZX9Y8W"),
                                                        FaultRow("e1", 1, "revealed_early", "zip: 12345")])
    frame = faults_df(store, "r")
    assert list(frame.columns) == FAULT_COLUMNS
    assert frame.values.tolist() == [["e1", 1, "revealed_early", "zip: 12345", "tau2-user-faults@1"],
                                     ["e1", 3, "invented_fact", "ZX9Y8W", "tau2-user-faults@1"],
                                     ["e2", 5, "premature_stop", "undone: x", "tau2-user-faults@1"]]
    assert checked_episodes(store, "r") == {"e1", "e2", "e3"}, "a clean episode is checked too"
    assert faults_df(store, "other").empty and checked_episodes(store, "other") == set()


def test_storing_an_episode_again_replaces_what_the_rules_found_in_it(store):
    write_faults(store, "r", RULES, ["e1", "e2"], [FaultRow("e1", 1, "invented_fact", "A"), FaultRow("e2", 1, "invented_fact", "B")])
    write_faults(store, "r", RULES_2, ["e1"], [FaultRow("e1", 3, "revealed_early", "C")])
    assert faults_df(store, "r")[["episode_id", "evidence", "detector"]].values.tolist() == [
        ["e1", "C", "tau2-user-faults@2"], ["e2", "B", "tau2-user-faults@1"]]
    assert fault_detectors(store, "r") == [RULES, RULES_2]


def test_a_judges_faults_are_read_only_for_that_judge_after_the_rules_on_a_turn(store):
    write_faults(store, "r", RULES, ["e1"], [FaultRow("e1", 3, "invented_fact", "A")])
    write_faults(store, "r", JUDGE, ["e1"], [FaultRow("e1", 3, "role_drift", "echo_assistant")], judged=True)
    write_faults(store, "r", OTHER, ["e1"], [FaultRow("e1", 1, "role_drift", "plans_aloud")], judged=True)
    assert faults_df(store, "r").kind.tolist() == ["invented_fact"]
    judged = faults_df(store, "r", JUDGE)
    assert judged[["turn_index", "kind", "detector"]].values.tolist() == [[3, "invented_fact", "tau2-user-faults@1"],
                                                                         [3, "role_drift", "local@v1:m"]]
    assert checked_episodes(store, "r", JUDGE) == {"e1"} and checked_episodes(store, "r", RULES_2) == set()
    write_faults(store, "r", JUDGE, ["e1"], [], judged=True)
    assert faults_df(store, "r", JUDGE).kind.tolist() == ["invented_fact"], "the judge's new answer replaced its old one"
    assert faults_df(store, "r", OTHER).kind.tolist() == ["role_drift", "invented_fact"]


def test_a_version_6_store_reads_as_having_no_faults_and_gains_the_tables(tmp_path):
    path = tmp_path / "v6.sqlite"
    old = Store(path)
    old.begin_run("run-1", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    old.close()
    with sqlite3.connect(path) as conn:
        conn.executescript("DROP INDEX user_faults_by_run; DROP TABLE user_faults; DROP TABLE user_fault_checks;"
                           " UPDATE meta SET value='6' WHERE key='schema_version';")
    reader = Store(path, readonly=True)
    assert reader.schema_version == 6 and faults_df(reader, "run-1").empty and checked_episodes(reader, "run-1") == set()
    assert fault_detectors(reader, "run-1") == []
    reader.close()
    upgraded = Store(path)
    assert upgraded.schema_version == SCHEMA_VERSION >= 7 and upgraded.run("run-1") is not None
    write_faults(upgraded, "run-1", RULES, ["e1"], [FaultRow("e1", 1, "invented_fact", "A")])
    assert faults_df(upgraded, "run-1").kind.tolist() == ["invented_fact"]
    upgraded.close()
