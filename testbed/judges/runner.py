"""Label every user turn of a stored run with one judge; resumable, concurrent, with progress."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from testbed.backends.factory import served_model_name
from testbed.judges.llm_judge import judge_all
from testbed.judges.specs import ResolvedJudge
from testbed.judges.turns import StoredTurn, user_turns
from testbed.judges.verdict import Verdict
from testbed.progress import EpisodeProgress
from testbed.store import Store
from testbed.store.labels import JudgeIdentity, judged_turns, write_labels

LOCAL_BATCH = 2000


@dataclass(frozen=True)
class JudgeSummary:
    """What one `judge` invocation did."""

    identity: JudgeIdentity
    turns: int
    skipped: int
    scored: int
    unscored: int


def identity_of(judge: ResolvedJudge) -> JudgeIdentity:
    """The name, version and model under which a judge's labels are stored."""
    if judge.spec.kind == "local":
        from testbed.judges.local import LocalJudge

        return JudgeIdentity(judge.spec.name, LocalJudge.version)
    assert judge.agent is not None
    return JudgeIdentity(judge.spec.name, judge.spec.prompt_version or "unversioned", served_model_name(judge.agent.spec))


async def judge_run(store: Store, run_id: str, judge: ResolvedJudge, *, console: Console | None = None,
                    show_progress: bool = True, backend=None) -> JudgeSummary:
    """Label the run's user turns that this judge has not scored yet; earlier labels stay."""
    who = identity_of(judge)
    turns = user_turns(store, run_id)
    done = judged_turns(store, run_id, who, scored_only=True)
    todo = [t for t in turns if (t.episode_id, t.turn_index) not in done]
    counts = {"scored": 0, "unscored": 0}

    def save(batch: list[tuple[StoredTurn, Verdict, int]]) -> None:
        write_labels(store, run_id, who, [(t.episode_id, t.turn_index, v, n) for t, v, n in batch])
        for _, v, _ in batch:
            counts["scored" if v.scored else "unscored"] += 1

    with EpisodeProgress(f"judge {who}", len(todo), console=console, enabled=show_progress, error_label="unscored") as progress:
        if judge.spec.kind == "local":
            from testbed.judges.local import LocalJudge

            local = LocalJudge()
            for start in range(0, len(todo), LOCAL_BATCH):
                chunk = todo[start : start + LOCAL_BATCH]
                save([(t, local.judge(t.item), 1) for t in chunk])
                for _ in chunk:
                    progress.advance(error=False, tokens=0)
        elif todo:
            await _judge_with_model(judge, todo, save, progress, backend)
    return JudgeSummary(who, len(turns), len(turns) - len(todo), counts["scored"], counts["unscored"])


async def _judge_with_model(judge: ResolvedJudge, todo: list[StoredTurn], save, progress, backend) -> None:
    def store_verdict(i: int, verdict: Verdict, attempts: int) -> None:
        save([(todo[i], verdict, attempts)])
        progress.advance(error=not verdict.scored, tokens=0)

    await judge_all(judge, [t.item for t in todo], backend=backend, on_verdict=store_verdict)
