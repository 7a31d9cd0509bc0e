"""A learned judge of two models: one for first replies, one for turns read in their conversation.

A first reply (a turn with nothing between the request and the answer) gives the conversation features nothing to
read, and there the model trained for first replies judges better: learned-4, trained with 878 conversation-rich
later turns, scores κ 0.714 / follow-up F1 0.657 on the gold dev set's first replies against learned-3's 0.740 /
0.677, and 0.607 / 0.542 against 0.620 / 0.555 on probe turns by grouped CV; learned-6, its successor, scores
0.696 / 0.607 on dev. So the default judge sends each turn to the model for its case (`judges/learned.yaml`:
`model_file` for turns with a conversation, `first_reply_model_file` for the rest). Its identity names both artefacts, the later-turn model first (the default: `learned-6+<digest>~learned-3+<digest>`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from testbed.judges.learned.judge import LearnedJudge, reported
from testbed.judges.verdict import JudgeInput, Verdict
from testbed.specs.registries import JudgeKindEntry
from testbed.store.labels import JudgeIdentity

if TYPE_CHECKING:
    from testbed.judges.base import OnVerdict
    from testbed.judges.specs import ResolvedJudge

ROUTE_MARK = "~"
"""Joins the two models' versions in the identity: the later-turn model's, then the first-reply model's."""


class RoutedLearnedJudge:
    """Two learned judges behind one identity: `later` for turns with a conversation before them, `first` for the rest."""

    model = None
    commit_every = LearnedJudge.commit_every

    def __init__(self, name: str, later: LearnedJudge, first: LearnedJudge):
        self.name = name
        self.later, self.first = later, first
        self.version = f"{later.version}{ROUTE_MARK}{first.version}"

    @property
    def identity(self) -> JudgeIdentity:
        """`name@<later model>~<first-reply model>` with no model server."""
        return JudgeIdentity(self.name, self.version)

    def judge_many(self, items: Iterable[JudgeInput]) -> list[Verdict]:
        """Verdicts in order, each turn judged by the model for its case."""
        items = list(items)
        later = [k for k, item in enumerate(items) if item.context]
        first = [k for k, item in enumerate(items) if not item.context]
        out: list[Verdict | None] = [None] * len(items)
        for positions, judge in ((later, self.later), (first, self.first)):
            for k, verdict in zip(positions, judge.judge_many([items[k] for k in positions]) if positions else []):
                out[k] = verdict
        return [v for v in out if v is not None]

    def judge(self, item: JudgeInput) -> Verdict:
        """Verdict on one turn."""
        return self.judge_many([item])[0]

    async def judge_all(self, items: Sequence[JudgeInput], on_verdict: OnVerdict | None = None) -> list[tuple[Verdict, int]]:
        """Verdicts in order, each counted as one call; computed in-process."""
        return reported(self.judge_many(items), on_verdict)


def build(resolved: ResolvedJudge, backend: object = None) -> LearnedJudge | RoutedLearnedJudge:
    """The `learned` judge kind's builder (see JUDGE_KINDS): the model file named by the spec, relative to it, and with a
    `first_reply_model_file` the two routed by whether a turn has a conversation before it."""
    from testbed.specs.loader import named_path

    spec = resolved.spec
    judge = LearnedJudge(spec.name, named_path(resolved.path, spec.model_file))
    if spec.first_reply_model_file is None:
        return judge
    return RoutedLearnedJudge(spec.name, judge, LearnedJudge(spec.name, named_path(resolved.path, spec.first_reply_model_file),
                                                             judge.embedder))


JUDGE_KIND = JudgeKindEntry("learned", build, requires=("model_file",))
"""The learned judge's entry in testbed.specs.registries.JUDGE_KINDS: a trained model file, or two routed."""
