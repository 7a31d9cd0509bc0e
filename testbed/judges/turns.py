"""The simulated-user turns of a run, each with the context a judge may read."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.judges.verdict import JudgeInput
from testbed.store import Store


@dataclass(frozen=True)
class StoredTurn:
    """A simulated-user turn as stored: where it is, and what a judge sees of it."""

    episode_id: str
    turn_index: int
    item: JudgeInput


def user_turns(store: Store, run_id: str) -> list[StoredTurn]:
    """Every generated user turn of the run's finished episodes, in a stable order.

    A generated user turn is a user message after the first assistant message. Its context is the
    episode's first user message (the request) and the latest assistant message before it, as
    shown to the simulated user.
    """
    rows = store.conn.execute(
        """SELECT m.episode_id, m.turn_index, m.role, m.content FROM messages m
           JOIN episodes e ON e.run_id = m.run_id AND e.episode_id = m.episode_id
           WHERE m.run_id=? AND e.status='done' AND m.role != 'system' ORDER BY m.episode_id, m.turn_index""",
        (run_id,),
    )
    out: list[StoredTurn] = []
    episode, question, answer = None, None, None
    for eid, turn, role, content in rows:
        if eid != episode:
            episode, question, answer = eid, None, None
        if role == "assistant":
            answer = content
        elif question is None:
            question = content
        elif answer is not None:
            out.append(StoredTurn(eid, turn, JudgeInput(f"{eid}:{turn}", question, answer, content)))
    return out
