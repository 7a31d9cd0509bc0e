"""A learned judge of two models: one for first replies, one for turns read in their conversation.

A first reply (a turn with nothing between the request and the answer) gives the conversation features nothing to
read, and there the model trained for first replies judges better: learned-4, trained with 878 conversation-rich
later turns, scores κ 0.714 / follow-up F1 0.657 on the gold dev set's first replies against learned-3's 0.740 /
0.677, and 0.607 / 0.542 against 0.620 / 0.555 on probe turns by grouped CV; learned-6, its successor, scores
0.696 / 0.607 on dev. So the default judge sends each turn to the model for its case (`judges/learned.yaml`:
`model_file` for turns with a conversation, `first_reply_model_file` for the rest). Its identity names both
artefacts, the later-turn model first (the default: `learned-6+<digest>~learned-3+<digest>~probe`).

A spec's `first_reply_kinds` narrows the first-reply model to the first replies of those scenario kinds, and the
identity then ends with them (`~probe`). The default names `probe`: on two fresh held-out sets of dialogue and τ²
turns, the later-turn model judged those conversations' first replies better than learned-3 did (learned-4 alone
0.499 / 0.648 against routed 0.446 / 0.555; learned-6 alone 0.525 / 0.581 against routed 0.495 / 0.520), while on
probe questions (gold dev) learned-3 is better. Issue 26's older set of raw-user dialogue turns points the other
way (routed by kind 0.519 / 0.303 against 0.558 / 0.375). A turn whose kind is not known (a gold file's line that
names none) goes to the first-reply model, so gold dev is judged as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
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
    """Two learned judges behind one identity: `first` for first replies (of `first_reply_kinds` only, when given, and of
    an unknown kind), `later` for the rest."""

    model = None
    commit_every = LearnedJudge.commit_every

    def __init__(self, name: str, later: LearnedJudge, first: LearnedJudge, first_reply_kinds: Collection[str] | None = None):
        self.name = name
        self.later, self.first = later, first
        self.first_reply_kinds = frozenset(first_reply_kinds) if first_reply_kinds is not None else None
        kinds = f"{ROUTE_MARK}{','.join(sorted(self.first_reply_kinds))}" if self.first_reply_kinds is not None else ""
        self.version = f"{later.version}{ROUTE_MARK}{first.version}{kinds}"

    def for_first_model(self, item: JudgeInput) -> bool:
        """Whether the first-reply model judges this turn: a first reply of one of its kinds, or of an unknown kind."""
        if item.context:
            return False
        return self.first_reply_kinds is None or item.kind is None or item.kind in self.first_reply_kinds

    @property
    def identity(self) -> JudgeIdentity:
        """`name@<later model>~<first-reply model>` with no model server."""
        return JudgeIdentity(self.name, self.version)

    def judge_many(self, items: Iterable[JudgeInput]) -> list[Verdict]:
        """Verdicts in order, each turn judged by the model for its case."""
        items = list(items)
        to_first = [self.for_first_model(item) for item in items]
        first = [k for k, yes in enumerate(to_first) if yes]
        later = [k for k, yes in enumerate(to_first) if not yes]
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
    `first_reply_model_file` the two routed by whether a turn has a conversation before it (and, with
    `first_reply_kinds`, by its scenario kind)."""
    from testbed.specs.loader import named_path

    spec = resolved.spec
    judge = LearnedJudge(spec.name, named_path(resolved.path, spec.model_file))
    if spec.first_reply_model_file is None:
        return judge
    return RoutedLearnedJudge(spec.name, judge, LearnedJudge(spec.name, named_path(resolved.path, spec.first_reply_model_file),
                                                             judge.embedder), spec.first_reply_kinds)


JUDGE_KIND = JudgeKindEntry("learned", build, requires=("model_file",))
"""The learned judge's entry in testbed.specs.registries.JUDGE_KINDS: a trained model file, or two routed."""
