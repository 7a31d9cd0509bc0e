"""What a judge reads (one user turn in context) and what it says about it."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.conversation_context import Earlier


@dataclass(frozen=True)
class JudgeInput:
    """One simulated-user turn with the context a judge may read: the request, the answer as shown, and the
    conversation between them (`testbed.conversation_context`: the user's earlier turns, the assistant's earlier
    answers, tool traffic marked; capped). A first reply has an empty context. `kind` is the scenario kind of the
    run the turn comes from (`probe`, `dialogue`, `tau2`, ...), None where it is not known (a gold file's line
    that names none)."""

    turn_id: str
    question: str
    assistant: str
    user_turn: str
    context: tuple[Earlier, ...] = ()
    kind: str | None = None


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on one turn.

    An 8-way judge gives `label` (and `followup` follows from it); a binary follow-up judge gives
    only `followup`. Both are None exactly when the verdict is *unscored* (the judge's reply could
    not be parsed after its retries); then `raw` keeps what it said. An unscored verdict is never a
    label and is excluded from rates, with its count reported.
    """

    label: str | None
    followup: bool | None
    reason: str
    raw: str | None = None

    @property
    def scored(self) -> bool:
        """True when the verdict carries a label or a follow-up decision."""
        return self.label is not None or self.followup is not None
