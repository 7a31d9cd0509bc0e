"""Fault reviews in the store: appended, the latest per fault and reviewer read back, unscored ones without a verdict,
and a version 5 store gaining the table with every row it held kept."""

from __future__ import annotations

import sqlite3

import pytest

from testbed.store import EpisodeKey, EpisodeOutcome, EpisodeReward, Store
from testbed.store.fault_reviews import FaultReviewRow
from testbed.store.labels import latest_labels, write_labels
from testbed.store.records import JudgeIdentity, LabelRow
from testbed.store.schema import SCHEMA_VERSION
from testbed.transcript import Message

A = JudgeIdentity("fault-review", "fault-review-1", "model-a")
B = JudgeIdentity("fault-review", "fault-review-1", "model-b")


def invented(verdict: str | None, reason: str, raw: str | None = None, attempts: int = 1) -> FaultReviewRow:
    return FaultReviewRow("e1", 3, "invented_fact", "ZX9Y8W", verdict, reason, raw, attempts)


def test_reviews_round_trip_and_the_latest_per_fault_and_reviewer_wins(store):
    drift = FaultReviewRow("e1", 3, "role_drift", "echo_assistant", "harmless", "minor", '{"verdict"...}')
    store.write_fault_reviews("r", A, [invented(None, "unparsable after 3 attempts", "??", 3), drift])
    store.write_fault_reviews("r", B, [invented("harmless", "b says so")])
    store.write_fault_reviews("r", A, [invented("hindered", "agent used the code", "{}")])
    mine = store.fault_reviews("r", A)
    assert [(r.key, r.verdict, r.reason, r.attempts) for r in mine] == [
        (("e1", 3, "role_drift"), "harmless", "minor", 1), (("e1", 3, "invented_fact"), "hindered", "agent used the code", 1)]
    assert all(r.reviewer == A and r.created_at and r.evidence for r in mine)
    assert sorted((str(r.reviewer), r.kind) for r in store.fault_reviews("r")) == [
        (str(A), "invented_fact"), (str(A), "role_drift"), (str(B), "invented_fact")]
    assert store.fault_reviewers("r") == [B, A], "the reviewer that wrote last comes last"
    assert store.fault_reviews("other") == [] and store.fault_reviewers("other") == []


def test_only_scored_reviews_count_as_reviewed_and_an_unscored_one_keeps_its_reply(store):
    failed = "review call failed: HTTP 500"
    store.write_fault_reviews("r", A, [FaultReviewRow("e1", 1, "invented_fact", "X", None, failed, None, 0),
                                       FaultReviewRow("e1", 5, "premature_stop", "undone: x", "harmless", "done anyway", "{}")])
    assert store.reviewed_faults("r", A) == {("e1", 5, "premature_stop")}
    assert store.reviewed_faults("r", B) == set()
    (unscored,) = [r for r in store.fault_reviews("r", A) if not r.scored]
    assert (unscored.verdict, unscored.reason, unscored.raw, unscored.attempts) == (None, failed, None, 0)


def test_a_verdict_outside_hindered_and_harmless_is_refused(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.write_fault_reviews("r", A, [FaultReviewRow("e1", 1, "invented_fact", "X", "maybe")])
    assert store.fault_reviews("r") == [], "the batch is stored whole or not at all"


def test_a_version_5_store_gains_the_table_and_keeps_its_rows(tmp_path):
    path = tmp_path / "v5.sqlite"
    old = Store(path)
    old.begin_run("run-1", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    key = EpisodeKey("e1", "task", "tau2-mock", "a", "m-a", "u", "m-u", "instructed", 0.0, 0, "none")
    messages = [Message("assistant", "Hi!", "a", 0), Message("user", "Book it.", "u", 1)]
    old.write_episode("run-1", EpisodeOutcome(key, messages, "done", "user_stop", task_score=1.0,
                                              reward=EpisodeReward(1.0, {"DB": 1.0}, {})))
    write_labels(old, "run-1", JudgeIdentity("local", "v1"), [LabelRow("e1", 1, "scored", "genuine_followup", True)])
    old.close()
    with sqlite3.connect(path) as conn:
        conn.executescript("DROP INDEX fault_reviews_by_reviewer; DROP TABLE fault_reviews;"
                           " UPDATE meta SET value='5' WHERE key='schema_version';")
    reader = Store(path, readonly=True)
    assert (reader.schema_version, reader.has_table("fault_reviews")) == (5, False)
    assert reader.fault_reviews("run-1") == [] and reader.fault_reviewers("run-1") == []
    assert reader.reviewed_faults("run-1", A) == set()
    reader.close()
    upgraded = Store(path)
    assert (upgraded.schema_version, upgraded.has_table("fault_reviews")) == (SCHEMA_VERSION, True) and SCHEMA_VERSION >= 6
    assert upgraded.messages("run-1", "e1") == messages
    assert upgraded.rewards("run-1")["e1"].breakdown == {"DB": 1.0}
    assert [(r.turn_index, r.label) for r in latest_labels(upgraded, "run-1")] == [(1, "genuine_followup")]
    upgraded.write_fault_reviews("run-1", A, [FaultReviewRow("e1", 1, "revealed_early", "zip: 12345", "harmless")])
    assert [r.verdict for r in upgraded.fault_reviews("run-1")] == ["harmless"]
    upgraded.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
