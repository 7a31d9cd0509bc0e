"""Where judges meet the store: the user turns they read, and the label rows they write back.

Which turns are generated user turns, and what context each is shown with, is the store's
`Store.turns` (one rule, `testbed.transcript.generated_user_turns`, over the spoken messages: an
assistant's tool call or a tool result is never "the answer", and a user's own tool call is never a
turn); this module only puts each turn in the shape a judge reads, and a judge's verdict in the
shape the store writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from testbed.judges.verdict import JudgeInput, Verdict
from testbed.store import Store
from testbed.store.records import LabelRow


@dataclass(frozen=True)
class StoredTurn:
    """A simulated-user turn as stored: where it is, and what a judge sees of it."""

    episode_id: str
    turn_index: int
    item: JudgeInput


def user_turns(store: Store, run_id: str) -> list[StoredTurn]:
    """Every generated user turn of the run's finished episodes, in a stable order, as judge inputs.

    The context is what `Store.turns` gives: the request, the latest spoken assistant message before the turn, and the
    conversation between them; each input names the run's scenario kind.
    """
    return list(stored_turns(store, run_id))


def stored_turns(store: Store, run_id: str) -> Iterator[StoredTurn]:
    """`user_turns` one at a time, read from the store in batches: for walking a run of any size."""
    kind = store.run(run_id).kind
    for t in store.iter_turns(run_id):
        yield StoredTurn(t.episode_id, t.turn_index, JudgeInput(t.turn_id, t.question, t.answer, t.user_turn, t.context, kind))


def label_row(episode_id: str, turn_index: int, verdict: Verdict, attempts: int = 1) -> LabelRow:
    """The store's row for a verdict on one turn: scored exactly when the verdict carries a label or a decision."""
    return LabelRow(episode_id, turn_index, "scored" if verdict.scored else "unscored", verdict.label, verdict.followup,
                    verdict.reason, verdict.raw, attempts)
