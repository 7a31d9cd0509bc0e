"""Whole-conversation turn reviews in the store: one row per user turn under the reviewer's identity, the latest per turn
and reviewer read back, an episode counted reviewed only when every latest row of it is scored, a tag without a
severity refused, and a version 7 store gaining the table with its rows kept."""

from __future__ import annotations

import sqlite3

import pytest

from testbed.store import Store
from testbed.store.records import JudgeIdentity
from testbed.store.schema import SCHEMA_VERSION
from testbed.store.turn_reviews import TurnReviewRow, turn_reviews_df

A = JudgeIdentity("user-review", "user-review-1", "model-a")
B = JudgeIdentity("user-review", "user-review-1", "model-b")


def unread(eid: str, turn: int) -> TurnReviewRow:
    return TurnReviewRow(eid, turn, (), None, "unparsable after 3 attempts", False, "no idea\n---\nno idea", 3)


def test_turn_reviews_round_trip_with_identity_and_the_latest_per_turn_wins(store):
    store.write_turn_reviews("r", A, [unread("e1", 2), unread("e1", 4)])
    store.write_turn_reviews("r", B, [TurnReviewRow("e1", 2), TurnReviewRow("e1", 4)])
    store.write_turn_reviews("r", A, [TurnReviewRow("e1", 2, ("hallucination", "other"), "critical_hindered", "made up", attempts=2),
                                      TurnReviewRow("e1", 4, attempts=2)])
    mine = store.turn_reviews("r", A)
    assert [(who, r.turn_index, r.tags, r.severity, r.scored, r.attempts) for who, r in mine] == [
        (A, 2, ("hallucination", "other"), "critical_hindered", True, 2), (A, 4, (), None, True, 2)]
    assert store.turn_reviewers("r") == [B, A], "the reviewer that wrote last comes last"
    frame = turn_reviews_df(store, "r")
    assert sorted(zip(frame.reviewer, frame.turn_index, frame.status)) == [
        (str(A), 2, "scored"), (str(A), 4, "scored"), (str(B), 2, "scored"), (str(B), 4, "scored")]
    assert str(A) == "user-review@user-review-1:model-a"
    assert store.turn_reviews("other") == [] and store.turn_reviewers("other") == []


def test_an_episode_counts_as_reviewed_only_when_its_latest_rows_are_scored(store):
    store.write_turn_reviews("r", A, [TurnReviewRow("e1", 2), TurnReviewRow("e1", 4), unread("e2", 2)])
    assert store.reviewed_conversations("r", A) == {"e1"} and store.reviewed_conversations("r", B) == set()
    (row,) = [r for _, r in store.turn_reviews("r", A) if r.episode_id == "e2"]
    assert (row.status, row.tags, row.severity, row.raw) == ("unscored", (), None, "no idea\n---\nno idea")
    store.write_turn_reviews("r", A, [TurnReviewRow("e2", 2, ("other",), "minor", "r")])
    assert store.reviewed_conversations("r", A) == {"e1", "e2"}


@pytest.mark.parametrize("row", [TurnReviewRow("e1", 2, ("hallucination",), None, "tag without severity"),
                                 TurnReviewRow("e1", 2, (), "minor", "severity without tag"),
                                 TurnReviewRow("e1", 2, ("other",), "minor", "unscored with a tag", False)])
def test_a_row_that_is_neither_clean_tagged_nor_unscored_is_refused(store, row):
    with pytest.raises(sqlite3.IntegrityError):
        store.write_turn_reviews("r", A, [TurnReviewRow("e1", 4), row])
    assert store.turn_reviews("r") == [], "the episode's rows are stored whole or not at all"


def test_a_version_7_store_reads_as_having_no_turn_reviews_and_gains_the_table(tmp_path):
    path = tmp_path / "v7.sqlite"
    old = Store(path)
    old.begin_run("run-1", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    old.close()
    with sqlite3.connect(path) as conn:
        conn.executescript("DROP INDEX turn_reviews_by_reviewer; DROP TABLE turn_reviews;"
                           " UPDATE meta SET value='7' WHERE key='schema_version';")
    reader = Store(path, readonly=True)
    assert reader.schema_version == 7 and reader.turn_reviews("run-1") == [] and reader.turn_reviewers("run-1") == []
    assert reader.reviewed_conversations("run-1", A) == set()
    reader.close()
    upgraded = Store(path)
    assert upgraded.schema_version == SCHEMA_VERSION == 8 and upgraded.run("run-1") is not None
    upgraded.write_turn_reviews("run-1", A, [TurnReviewRow("e1", 2, ("other",), "minor", "r")])
    assert [r.tags for _, r in upgraded.turn_reviews("run-1")] == [("other",)]
    upgraded.close()
