"""Reviews of flagged simulated-user faults: a model's word on whether each one hindered the agent.

A kind's detector flags a fault on a user turn (its views' `faults`, the flags stored in testbed.store.user_faults); a
reviewer (a model under a `JudgeIdentity`) says whether it *hindered* the agent or was *harmless*. Reviews are appended like labels:
a rerun that scores a fault left unscored adds a row, and the latest row per fault and reviewer counts.
An unscored review has no verdict and keeps the reply it could not read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from testbed.store.records import JudgeIdentity
from testbed.store.text import storable

VERDICTS = ("hindered", "harmless")
"""What a scored review says (the schema's CHECK): the flagged behaviour kept the agent from the task, or it did not."""

_LATEST = ("SELECT MAX(review_id) FROM fault_reviews WHERE run_id=? {who}"
           " GROUP BY reviewer, reviewer_version, model, episode_id, turn_index, kind")
_WHO = "AND reviewer=? AND reviewer_version=? AND model=?"


@dataclass(frozen=True)
class FaultReviewRow:
    """One review as a reviewer hands it to the store."""

    episode_id: str
    """The episode of the flagged turn."""
    turn_index: int
    """The flagged user turn's message index."""
    kind: str
    """The fault kind the rule flagged (one turn may carry several, each reviewed on its own)."""
    evidence: str
    """What triggered the flag, as the reviewer was shown it."""
    verdict: str | None
    """`hindered`, `harmless`, or None when the review is unscored."""
    reason: str = ""
    """The reviewer's one-line reason, or why the review is unscored."""
    raw: str | None = None
    """The reviewer's reply (every attempt's, for an unscored review)."""
    attempts: int = 1
    """Model calls the review took."""


@dataclass(frozen=True)
class FaultReview:
    """A stored review, with who gave it and when."""

    episode_id: str
    """The episode of the flagged turn."""
    turn_index: int
    """The flagged user turn's message index."""
    kind: str
    """The fault kind reviewed."""
    evidence: str
    """What triggered the flag."""
    reviewer: JudgeIdentity
    """Reviewer name, prompt version and served model."""
    verdict: str | None
    """`hindered`, `harmless`, or None when unscored."""
    reason: str | None
    """The one-line reason, or why it is unscored."""
    raw: str | None
    """The reply as the model gave it."""
    attempts: int
    """Model calls it took."""
    created_at: str
    """When it was written (UTC, ISO)."""

    @property
    def scored(self) -> bool:
        """True when the review carries a verdict."""
        return self.verdict is not None

    @property
    def key(self) -> tuple[str, int, str]:
        """The fault it is about: episode, turn and kind."""
        return (self.episode_id, self.turn_index, self.kind)


class FaultReviewStore:
    """The store's fault-review methods (`Store` inherits them); a store older than the table reads as having none."""

    def fault_reviews(self, run_id: str, reviewer: JudgeIdentity | None = None) -> list[FaultReview]:
        """The latest review of each fault of the run by each reviewer (by `reviewer` only, when given), in the order written."""
        if not self.has_table("fault_reviews"):
            return []
        who, params = (_WHO, (reviewer.judge, reviewer.version, reviewer.model)) if reviewer else ("", ())
        rows = self.conn.execute(f"SELECT * FROM fault_reviews WHERE review_id IN ({_LATEST.format(who=who)}) ORDER BY review_id",
                                 (run_id, *params))
        return [FaultReview(r["episode_id"], r["turn_index"], r["kind"], r["evidence"],
                            JudgeIdentity(r["reviewer"], r["reviewer_version"], r["model"]), r["verdict"], r["reason"], r["raw"],
                            r["attempts"], r["created_at"]) for r in rows]

    def fault_reviewers(self, run_id: str) -> list[JudgeIdentity]:
        """Every reviewer of the run's faults, the one that wrote last at the end (the one a report shows)."""
        if not self.has_table("fault_reviews"):
            return []
        rows = self.conn.execute("SELECT reviewer, reviewer_version, model FROM fault_reviews WHERE run_id=?"
                                 " GROUP BY reviewer, reviewer_version, model ORDER BY MAX(review_id)", (run_id,))
        return [JudgeIdentity(*r) for r in rows]

    def reviewed_faults(self, run_id: str, reviewer: JudgeIdentity) -> set[tuple[str, int, str]]:
        """The faults (episode, turn, kind) this reviewer has given a verdict on: a rerun asks about the others only."""
        if not self.has_table("fault_reviews"):
            return set()
        rows = self.conn.execute("SELECT DISTINCT episode_id, turn_index, kind FROM fault_reviews WHERE run_id=? "
                                 f"{_WHO} AND verdict IS NOT NULL", (run_id, reviewer.judge, reviewer.version, reviewer.model))
        return {(r[0], r[1], r[2]) for r in rows}

    def write_fault_reviews(self, run_id: str, reviewer: JudgeIdentity, rows: Iterable[FaultReviewRow]) -> None:
        """Append reviews under one reviewer in one transaction (a batch is stored whole or not at all), stamped in the
        store's one time format (`sqlite_store.now`'s, which this module, imported by it, cannot import)."""
        written = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with self.conn:
            self.conn.executemany(
                "INSERT INTO fault_reviews (run_id, episode_id, turn_index, kind, evidence, reviewer, reviewer_version, model,"
                " verdict, reason, raw, attempts, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, r.episode_id, r.turn_index, r.kind, storable(r.evidence), reviewer.judge, reviewer.version,
                  reviewer.model, r.verdict, storable(r.reason), storable(r.raw), r.attempts, written) for r in rows],
            )
