"""Review every finished episode's simulated user with one whole-conversation reviewer: resumable, concurrent, with progress.

Each episode is one paid model call (and its retries); its rows (one per user turn) are written the moment its review
arrives, and a rerun asks only about the episodes this reviewer has not scored (an unscored episode is asked again).
What the reviewer is shown beside the conversation and the vocabulary it answers in are the kind's (its views' fault
detector: `review_contexts`, `tags`, `severities`), so the judges know no benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.console import Console

from testbed.backends.base import BackendError, BackendUnavailable
from testbed.concurrency import gather_or_cancel
from testbed.judges.conversation_review import (ConversationReview, ConversationReviewer, ErrorVocabulary, reviewer_identity,
                                                unscored, user_turns)
from testbed.judges.fault_review import ResolvedReviewer
from testbed.judges.runner import judging_lease, lease_key, still_leased
from testbed.progress import EpisodeProgress
from testbed.store import Store
from testbed.store.frames import episodes_df
from testbed.store.records import JudgeIdentity


def vocabulary_of(detector) -> ErrorVocabulary:
    """The tags and severities a kind's fault detector (its views' `faults`) lets a reviewer give."""
    return ErrorVocabulary(dict(detector.tags), dict(detector.severities))


@dataclass(frozen=True)
class ConversationReviewSummary:
    """What one whole-conversation review invocation did."""

    identity: JudgeIdentity
    episodes: int
    """Finished episodes handed in (those with the user's instructions to show)."""
    skipped: int
    """Of those, the ones this reviewer had already scored (not asked again)."""
    reviewed: int
    """Episodes scored now."""
    unscored: int
    """Episodes asked now whose review could not be read (or whose call failed)."""
    turns: int = 0
    """User turns scored now."""
    by_severity: Mapping[str, int] = field(default_factory=dict)
    """Turns tagged now with an error, per severity."""


async def review_conversations(store: Store, run_id: str, contexts: Mapping[str, tuple[str, str]],
                               reviewer: ResolvedReviewer, vocabulary: ErrorVocabulary, *, backend=None,
                               console: Console | None = None, show_progress: bool = True) -> ConversationReviewSummary:
    """Ask `reviewer` about every episode of `contexts` (episode id → (instructions, guidelines)) it has not scored yet
    and store each episode's turn reviews as they arrive.

    `backend` replaces the reviewer's agent (tests pass a scripted one); without it the agent is started once for the
    whole run. Episodes are read from the store one at a time as a slot frees (bounded memory). A second process
    reviewing the same run as the same reviewer is refused (StoreError) until this one ends; an unreachable server
    (BackendUnavailable) stops the review, keeping every episode written before it; a call that fails otherwise is an
    unscored review with the reason.
    """
    who = reviewer_identity(reviewer)
    episodes = episodes_df(store, run_id, exact=True)
    endings = dict(zip(episodes.episode_id, episodes.termination))
    async with judging_lease(store, run_id, who):
        done = store.reviewed_conversations(run_id, who)
        todo = sorted(e for e in contexts if e not in done)
        counts: Counter = Counter()

        def save(review: ConversationReview) -> None:
            still_leased(store, lease_key(run_id, who))
            store.write_turn_reviews(run_id, who, review.turns)
            if review.turns and review.scored:
                counts["reviewed"] += 1
                counts["turns"] += len(review.turns)
                counts.update(f"severity:{t.severity}" for t in review.errors)
            elif review.turns:
                counts["unscored"] += 1
            progress.advance(error=bool(review.turns) and not review.scored, tokens=0)

        bar = EpisodeProgress(f"review {who}", len(todo), console=console, enabled=show_progress, error_label="unscored")
        with bar as progress:
            if todo:
                async with _started(reviewer, backend) as model:
                    asker = ConversationReviewer(reviewer, vocabulary, model)
                    gate = asyncio.Semaphore(reviewer.settings.concurrency)

                    async def one(eid: str) -> None:
                        async with gate:
                            messages = store.messages(run_id, eid)
                            instructions, guidelines = contexts[eid]
                            try:
                                review = await asker.review(messages, instructions, guidelines, eid, endings.get(eid))
                            except BackendUnavailable:
                                raise
                            except BackendError as exc:
                                review = unscored(eid, user_turns(messages), f"review call failed: {exc.reason}", None, 0)
                        save(review)

                    await gather_or_cancel(one(eid) for eid in todo)
    severities = {s: counts[f"severity:{s}"] for s in vocabulary.severities}
    return ConversationReviewSummary(who, len(contexts), len(contexts) - len(todo), counts["reviewed"], counts["unscored"],
                                     counts["turns"], severities)


@contextlib.asynccontextmanager
async def _started(reviewer: ResolvedReviewer, backend):
    """The model to ask for the whole run: `backend`, or the reviewer's agent started here once."""
    if backend is not None:
        yield backend
        return
    from testbed.backends.factory import BackendPool

    async with BackendPool() as pool:
        yield await pool.backend_for(reviewer.agent.spec)
