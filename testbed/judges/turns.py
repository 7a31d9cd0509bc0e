"""Where judges meet the store: the user turns they read, and the label rows they write back.

Which turns are generated user turns is one rule, `testbed.transcript.generated_user_turns`; the
context each is shown with is built here from the episode's *spoken* messages (`Message.spoken`),
what the simulated user could read: an assistant's tool call or a tool result is never "the answer",
and a user's own tool call (a dual-control task's phone) is never a turn. A judge's verdict is put
in the shape the store writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from testbed.judges.verdict import JudgeInput, Verdict
from testbed.store import Store
from testbed.store.records import LabelRow, TurnRecord
from testbed.transcript import Message, generated_user_turns


@dataclass(frozen=True)
class StoredTurn:
    """A simulated-user turn as stored: where it is, and what a judge sees of it."""

    episode_id: str
    turn_index: int
    item: JudgeInput


def user_turns(store: Store, run_id: str) -> list[StoredTurn]:
    """Every generated user turn of the run's finished episodes, in a stable order, as judge inputs.

    The context is what `spoken_turns` gives: the request and the latest spoken assistant message before the turn.
    """
    return list(stored_turns(store, run_id))


def spoken_turns(episode_id: str, messages: Sequence[Message]) -> list[TurnRecord]:
    """One episode's generated user turns (in turn order), each with the context the simulated user saw.

    `question` is the episode's first spoken user message (the request); `answer` is the latest
    spoken assistant message before the turn (never a tool call's empty text nor a tool's result).
    """
    generated = {m.turn_index for m in generated_user_turns(messages)}
    spoken = [m for m in messages if m.spoken]
    question = next((m.content for m in spoken if m.role == "user"), "")
    out, answer = [], ""
    for m in spoken:
        if m.role == "assistant":
            answer = m.content
        elif m.turn_index in generated:
            out.append(TurnRecord(episode_id, m.turn_index, question, answer, m.content))
    return out


def iter_spoken_turns(store: Store, run_id: str) -> Iterator[TurnRecord]:
    """`spoken_turns` of every finished episode of the run, by episode id, read from the store in batches:
    the turns `Store.turn_keys` gives, in its order, for walking a run of any size."""
    for episode_id, messages in store.iter_messages(run_id):
        yield from spoken_turns(episode_id, messages)


def stored_turns(store: Store, run_id: str) -> Iterator[StoredTurn]:
    """`user_turns` one at a time, read from the store in batches: for walking a run of any size."""
    for t in iter_spoken_turns(store, run_id):
        yield StoredTurn(t.episode_id, t.turn_index, JudgeInput(t.turn_id, t.question, t.answer, t.user_turn))


def label_row(episode_id: str, turn_index: int, verdict: Verdict, attempts: int = 1) -> LabelRow:
    """The store's row for a verdict on one turn: scored exactly when the verdict carries a label or a decision."""
    return LabelRow(episode_id, turn_index, "scored" if verdict.scored else "unscored", verdict.label, verdict.followup,
                    verdict.reason, verdict.raw, attempts)
