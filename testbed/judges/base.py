"""The one interface every judge implements, and the factory that builds one from a judge spec.

Callers (labelling a stored run, scoring a judge against gold labels) work through this
interface only, so they hold no knowledge of which judges exist: a judge kind is a builder
registered in `testbed.specs.registries.JUDGE_KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from testbed.judges.verdict import JudgeInput, Verdict
from testbed.specs.registries import JUDGE_KINDS
from testbed.store.labels import JudgeIdentity

if TYPE_CHECKING:
    from testbed.backends.base import Backend
    from testbed.judges.specs import ResolvedJudge

OnVerdict = Callable[[int, Verdict, int], None]
"""Called as `(index, verdict, model calls taken)` the moment each verdict is known."""


@runtime_checkable
class Judge(Protocol):
    """Gives verdicts on user turns, under an identity that says whose labels they are."""

    @property
    def identity(self) -> JudgeIdentity:
        """Name, version and model its labels are stored under; a rerun finds them by it, so it must be stable."""

    @property
    def commit_every(self) -> int:
        """How many verdicts a runner may hold before writing them: large for a cheap judge, 1 for a model
        judge, so a killed judge run loses at most the calls in flight."""

    async def judge_all(self, items: Sequence[JudgeInput], on_verdict: OnVerdict | None = None) -> list[tuple[Verdict, int]]:
        """Verdicts and model calls taken, in the order of `items`; `on_verdict` sees each as it arrives.

        A turn the judge could not score is an unscored verdict, never an exception that loses the others.
        """


def make_judge(resolved: ResolvedJudge, backend: Backend | None = None) -> Judge:
    """The judge a resolved spec describes, built by its kind's registered builder.

    `backend` replaces the model the spec binds (tests pass a scripted one); judges without a
    model ignore it. Building starts nothing: a model judge starts its backend when it judges.
    """
    return JUDGE_KINDS.entry(resolved.spec.kind).build(resolved, backend=backend)
