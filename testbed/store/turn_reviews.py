"""A reviewer's verdict on every simulated-user turn of a conversation: which errors each turn made, and how much they mattered.

A whole-conversation reviewer (testbed.judges.conversation_review) reads an episode and names the user turns with an
error, each with its tags and one severity in the vocabulary of the kind's fault detector (its views' `faults`); a
user turn it does not name was reviewed and found clean. One row is stored per user turn reviewed, under the reviewer's
identity (name, prompt version, model). A reply that could not be read marks every user turn of the episode
*unscored*, keeping the reply, never clean. Rows are appended: a rerun that scores an episode left unscored adds rows,
and the latest row per turn and reviewer counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from testbed.store.records import JudgeIdentity
from testbed.store.text import storable

TURN_REVIEW_COLUMNS = ["episode_id", "turn_index", "status", "tags", "severity", "reason", "raw", "attempts",
                       "reviewer"]
"""The columns of `turn_reviews_df`."""

_LATEST = ("SELECT MAX(review_id) FROM turn_reviews WHERE run_id=? {who}"
           " GROUP BY reviewer, reviewer_version, model, episode_id, turn_index")
_WHO = "AND reviewer=? AND reviewer_version=? AND model=?"


@dataclass(frozen=True)
class TurnReviewRow:
    """One user turn's review as a reviewer hands it to the store."""

    episode_id: str
    """The episode of the turn."""
    turn_index: int
    """The user turn's message index."""
    tags: tuple[str, ...] = ()
    """The error tags the reviewer gave the turn; empty when it is clean or the review is unscored."""
    severity: str | None = None
    """The error's severity; None when the turn is clean or the review is unscored."""
    reason: str = ""
    """The reviewer's one-line reason, or why the review is unscored."""
    scored: bool = True
    """False when the reviewer's reply for the episode could not be read: the turn is then neither clean nor tagged."""
    raw: str | None = None
    """The reviewer's replies for the episode, kept for an unscored review."""
    attempts: int = 1
    """Model calls the episode's review took."""

    @property
    def status(self) -> str:
        """`scored` or `unscored`, as stored."""
        return "scored" if self.scored else "unscored"


class TurnReviewStore:
    """The store's turn-review methods (`Store` inherits them); a store older than the table reads as having none."""

    def turn_reviews(self, run_id: str, reviewer: JudgeIdentity | None = None) -> list[tuple[JudgeIdentity, TurnReviewRow]]:
        """The latest review of each user turn of the run by each reviewer (by `reviewer` only, when given), in the order
        written, each with who gave it."""
        if not self.has_table("turn_reviews"):
            return []
        who, params = (_WHO, (reviewer.judge, reviewer.version, reviewer.model)) if reviewer else ("", ())
        rows = self.conn.execute(f"SELECT * FROM turn_reviews WHERE review_id IN ({_LATEST.format(who=who)}) ORDER BY review_id",
                                 (run_id, *params))
        return [(JudgeIdentity(r["reviewer"], r["reviewer_version"], r["model"]),
                 TurnReviewRow(r["episode_id"], r["turn_index"], tuple(json.loads(r["tags"])), r["severity"], r["reason"] or "",
                               r["status"] == "scored", r["raw"], r["attempts"])) for r in rows]

    def turn_reviewers(self, run_id: str) -> list[JudgeIdentity]:
        """Every whole-conversation reviewer of the run, the one that wrote last at the end (the one a report shows)."""
        if not self.has_table("turn_reviews"):
            return []
        rows = self.conn.execute("SELECT reviewer, reviewer_version, model FROM turn_reviews WHERE run_id=?"
                                 " GROUP BY reviewer, reviewer_version, model ORDER BY MAX(review_id)", (run_id,))
        return [JudgeIdentity(*r) for r in rows]

    def reviewed_conversations(self, run_id: str, reviewer: JudgeIdentity) -> set[str]:
        """The episodes whose every reviewed user turn this reviewer has scored (latest rows): a rerun skips them."""
        if not self.has_table("turn_reviews"):
            return set()
        rows = self.conn.execute(f"SELECT episode_id, MIN(status = 'scored') FROM turn_reviews WHERE review_id IN "
                                 f"({_LATEST.format(who=_WHO)}) GROUP BY episode_id",
                                 (run_id, reviewer.judge, reviewer.version, reviewer.model))
        return {r[0] for r in rows if r[1]}

    def write_turn_reviews(self, run_id: str, reviewer: JudgeIdentity, rows: Iterable[TurnReviewRow]) -> None:
        """Append turn reviews under one reviewer in one transaction (an episode's rows are stored whole or not at all)."""
        written = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with self.conn:
            self.conn.executemany(
                "INSERT INTO turn_reviews (run_id, episode_id, turn_index, reviewer, reviewer_version, model, status, tags,"
                " severity, reason, raw, attempts, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, r.episode_id, r.turn_index, reviewer.judge, reviewer.version, reviewer.model, r.status,
                  json.dumps(list(r.tags)), r.severity, storable(r.reason), storable(r.raw), r.attempts, written) for r in rows],
            )


def turn_reviews_df(store, run_id: str, reviewer: JudgeIdentity | None = None) -> pd.DataFrame:
    """The latest turn reviews of the run (by `reviewer` only, when given) as a frame (`TURN_REVIEW_COLUMNS`): tags as
    tuples, the reviewer as its identity string."""
    rows = [(r.episode_id, r.turn_index, r.status, r.tags, r.severity, r.reason, r.raw, r.attempts, str(who))
            for who, r in store.turn_reviews(run_id, reviewer)]
    return pd.DataFrame(rows, columns=TURN_REVIEW_COLUMNS)
