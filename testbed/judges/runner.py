"""Label every user turn of a stored run with one judge; resumable, concurrent, with progress."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from testbed.judges.base import Judge, make_judge
from testbed.judges.specs import ResolvedJudge
from testbed.judges.turns import StoredTurn, label_row, user_turns
from testbed.judges.verdict import Verdict
from testbed.progress import EpisodeProgress
from testbed.store import Store
from testbed.store.labels import JudgeIdentity, judged_turns, write_labels


@dataclass(frozen=True)
class JudgeSummary:
    """What one `judge` invocation did."""

    identity: JudgeIdentity
    turns: int
    skipped: int
    scored: int
    unscored: int


def identity_of(judge: ResolvedJudge) -> JudgeIdentity:
    """The name, version and model under which a judge's labels are stored (building the judge starts nothing)."""
    return make_judge(judge).identity


async def judge_run(store: Store, run_id: str, judge: ResolvedJudge, *, console: Console | None = None,
                    show_progress: bool = True, backend=None) -> JudgeSummary:
    """Label the run's user turns that this judge has not scored yet; earlier labels stay."""
    labeller = make_judge(judge, backend)
    who = labeller.identity
    turns = user_turns(store, run_id)
    done = judged_turns(store, run_id, who, scored_only=True)
    todo = [t for t in turns if (t.episode_id, t.turn_index) not in done]
    counts = {"scored": 0, "unscored": 0}

    def save(batch: list[tuple[StoredTurn, Verdict, int]]) -> None:
        write_labels(store, run_id, who, [label_row(t.episode_id, t.turn_index, v, n) for t, v, n in batch])
        for _, v, _ in batch:
            counts["scored" if v.scored else "unscored"] += 1

    with EpisodeProgress(f"judge {who}", len(todo), console=console, enabled=show_progress, error_label="unscored") as progress:
        if todo:
            await _judge_in_batches(labeller, todo, save, progress)
    return JudgeSummary(who, len(turns), len(turns) - len(todo), counts["scored"], counts["unscored"])


async def _judge_in_batches(labeller: Judge, todo: list[StoredTurn], save, progress) -> None:
    """Judge the turns, writing verdicts every `labeller.commit_every` (and the rest at the end), then counting them."""
    pending: list[tuple[StoredTurn, Verdict, int]] = []

    def flush() -> None:
        save(pending)
        for _, verdict, _ in pending:
            progress.advance(error=not verdict.scored, tokens=0)
        pending.clear()

    def arrived(i: int, verdict: Verdict, attempts: int) -> None:
        pending.append((todo[i], verdict, attempts))
        if len(pending) >= labeller.commit_every:
            flush()

    await labeller.judge_all([t.item for t in todo], arrived)
    if pending:
        flush()
