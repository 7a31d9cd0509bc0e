"""`testbed review-faults RUN --whole`: a model reviews every finished episode's simulated user, turn by turn, in the kind's
error taxonomy (testbed.judges.conversation_review); the command itself lives in testbed.cli.fault_review."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testbed.backends.base import BackendError
from testbed.cli.app import console, fail, open_store, run_async, say
from testbed.cli.shell import Terminated
from testbed.judges.fault_review import ResolvedReviewer
from testbed.specs.errors import SpecError
from testbed.store.sqlite_store import StoreError

KEPT = "Episodes reviewed before this are kept; run the same command again to continue."


@contextmanager
def kept_on_failure(kept: str) -> Iterator[None]:
    """A review command's failures as one clear line each, saying that what it stored is `kept`: a bad store or spec,
    a dead server, or a stop (^C, SIGTERM, exit status 130)."""
    try:
        yield
    except (StoreError, SpecError) as exc:
        fail(str(exc))
    except BackendError as exc:
        fail(f"{exc.reason}\n{kept}")
    except (KeyboardInterrupt, Terminated):
        fail(f"stopped; {kept[0].lower()}{kept[1:]}", 130)


def review_whole(run_id: str, reviewer: ResolvedReviewer, store: Path | None, quiet: bool) -> None:
    """Review the run's finished episodes not yet scored by `reviewer`; say what was done in one line."""
    from testbed.judges.conversation_review_run import review_conversations, vocabulary_of
    from testbed.specs.registries import kind_views

    db = open_store(store)
    with kept_on_failure(KEPT):
        run = db.run(run_id)["run_id"]
        detector = kind_views(db.run(run).kind).faults
        if detector is None:
            say(f"run {run} is of a kind whose simulated user's errors are not reviewed: nothing to review")
            return
        contexts, why = detector.review_contexts(db, run)
        if not contexts:
            say(f"run {run} has no finished episode whose user's instructions can be shown: nothing to review"
                + (f" ({why})" if why else ""))
            return
        if why:
            say(f"left out: {why}")
        summary = run_async(review_conversations(db, run, contexts, reviewer, vocabulary_of(detector), console=console,
                                                 show_progress=not quiet))
    tagged = ", ".join(f"{n} {s}" for s, n in summary.by_severity.items())
    say(f"reviewer {summary.identity}: {summary.reviewed} episodes reviewed ({summary.turns} user turns; tagged: {tagged}), "
        f"{summary.unscored} unscored; {summary.skipped} of {summary.episodes} finished episodes already reviewed before")
