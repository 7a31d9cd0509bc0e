"""Review every flagged fault of a stored run with one reviewer: resumable, concurrent, with progress.

Only the flagged faults are sent (each is a paid model call), each review is written the moment it
arrives, and a rerun asks only about the faults this reviewer has not given a verdict on (an unscored
review is asked again). Which faults are flagged is the store's to say (`faults_to_review`: the faults a kind's
detector stored, testbed.store.user_faults), so the judges know no benchmark.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby

from rich.console import Console

from testbed.judges.fault_review import FaultReviewer, FlaggedFault, ResolvedReviewer
from testbed.judges.runner import judging_lease, lease_key, still_leased
from testbed.progress import EpisodeProgress
from testbed.store import Store
from testbed.store.fault_reviews import FaultReviewRow
from testbed.store.records import JudgeIdentity
from testbed.store.user_faults import faults_df

def faults_to_review(store: Store, run_id: str, judge: JudgeIdentity | None = None,
                     meanings: Mapping[str, str] | None = None) -> list[FlaggedFault]:
    """The stored faults of the run's finished episodes (role drift too when `judge` is the judge whose drift faults
    were stored), in episode and turn order, as a reviewer is asked about them, each with what its kind means
    (`meanings`, the detector's). Errored episodes are left out, as every rate of a report leaves them out: reviewing
    them would be paid for and never shown."""
    finished = store.done_episode_ids(run_id)
    frame = faults_df(store, run_id, judge)
    return [FlaggedFault(eid, int(turn), kind, evidence, (meanings or {}).get(kind, ""))
            for eid, turn, kind, evidence in frame[["episode_id", "turn_index", "kind", "evidence"]].itertuples(index=False, name=None)
            if eid in finished]


REVIEW_CHUNK = 500
"""Faults whose episodes' messages are read and reviewed at a time: a run of any size is reviewed in bounded memory."""


@dataclass(frozen=True)
class ReviewSummary:
    """What one review invocation did."""

    identity: JudgeIdentity
    flagged: int
    """Faults handed in."""
    skipped: int
    """Of those, the ones this reviewer had already given a verdict on (not asked again)."""
    hindered: int
    harmless: int
    unscored: int


async def review_faults(store: Store, run_id: str, faults: Sequence[FlaggedFault], reviewer: ResolvedReviewer, *,
                        backend=None, console: Console | None = None, show_progress: bool = True,
                        chunk: int = REVIEW_CHUNK) -> ReviewSummary:
    """Ask `reviewer` about each of the run's `faults` it has no verdict on yet and store every review as it arrives.

    `backend` replaces the reviewer's agent (tests pass a scripted one); without it the agent is started once for the
    whole run. A second process reviewing the same run as the same reviewer is refused (StoreError) until this one
    ends; an unreachable server (BackendUnavailable) stops the review, keeping every review written before it.
    """
    asker = FaultReviewer(reviewer, backend)
    who = asker.identity
    async with judging_lease(store, run_id, who):
        done = store.reviewed_faults(run_id, who)
        todo = sorted((f for f in faults if f.key not in done), key=lambda f: f.key)
        counts = {"hindered": 0, "harmless": 0, None: 0}

        def save(row: FaultReviewRow) -> None:
            still_leased(store, lease_key(run_id, who))
            store.write_fault_reviews(run_id, who, [row])
            counts[row.verdict] += 1
            progress.advance(error=row.verdict is None, tokens=0)

        bar = EpisodeProgress(f"review {who}", len(todo), console=console, enabled=show_progress, error_label="unscored")
        with bar as progress:
            if todo:
                async with _bound(asker) as bound:
                    for part in _chunks(todo, chunk):
                        messages = {eid: store.messages(run_id, eid) for eid in dict.fromkeys(f.episode_id for f in part)}
                        await bound.review_all([(messages[f.episode_id], f) for f in part], lambda _, row: save(row))
    return ReviewSummary(who, len(faults), len(faults) - len(todo), counts["hindered"], counts["harmless"], counts[None])


@contextlib.asynccontextmanager
async def _bound(asker: FaultReviewer):
    """The reviewer bound to a started model for the whole run (its agent's, started here once, unless it has one)."""
    if asker.backend is not None:
        yield asker
        return
    from testbed.backends.factory import BackendPool

    async with BackendPool() as pool:
        yield FaultReviewer(asker.reviewer, await pool.backend_for(asker.reviewer.agent.spec))


def _chunks(faults: list[FlaggedFault], size: int) -> Iterator[list[FlaggedFault]]:
    """Runs of about `size` faults, never splitting one episode's faults."""
    part: list[FlaggedFault] = []
    for _, group in groupby(faults, key=lambda f: f.episode_id):
        part += group
        if len(part) >= size:
            yield part
            part = []
    if part:
        yield part
