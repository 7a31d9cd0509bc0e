"""How a stored τ² run's turns become annotation items (the τ² views' `annotation_turns`), as the fault gold set's are.

The customer's opening is the episode's request, what its later turns are read against, so it is not an item (the
gold set's items, `testbed.analysis.tau2.judge_items`, leave it out too). A message of a task's scripted history is
τ²'s own text, never committed: an item shows `SCRIPTED_NOTE` in its place, wherever it appears (the request, the
context, the message the turn replies to).
"""

from __future__ import annotations

from dataclasses import replace

SCRIPTED_NOTE = "[a message from the task's script, not shown]"
"""What an item shows in place of a message of a τ² task's scripted history."""


def annotation_turns(store, run_id: str):
    """A function of a stored turn (`TurnRecord`) of the run: None for an episode's opening, else the turn with every
    scripted message's text replaced by `SCRIPTED_NOTE`. Each episode's messages are read once."""
    from testbed.scenarios.tau2.trajectory import GREETING, SCRIPTED
    from testbed.transcript import request_message

    seen: dict[str, tuple[int | None, frozenset[str]]] = {}

    def episode(episode_id: str) -> tuple[int | None, frozenset[str]]:
        if episode_id not in seen:
            messages = store.messages(run_id, episode_id)
            request = request_message(messages)
            scripted = frozenset(m.content for m in messages if m.speaker == SCRIPTED and m.content and m.content != GREETING)
            seen[episode_id] = (request.turn_index if request is not None else None, scripted)
        return seen[episode_id]

    def shown(turn):
        opening, scripted = episode(turn.episode_id)
        if turn.turn_index == opening:
            return None
        masked = lambda text: SCRIPTED_NOTE if text in scripted else text  # noqa: E731
        return replace(turn, question=masked(turn.question), answer=masked(turn.answer),
                       context=tuple(replace(e, text=masked(e.text)) for e in turn.context))

    return shown
