"""The human reference of a real-conversation context: what the real user wrote next, stored as an episode.

A scenario over a real-conversation dataset (testbed.datasets.contexts) stores, beside the simulated
users' episodes on a context, one *reference episode*: the real context, the real answer, and the
real user's next turn as its one user turn. Its conditions say who wrote it (`HUMAN_MODE`, user
model `HUMAN_MODEL`), so judges label it like any user turn and every report, figure and export
reads it as one more condition: the real users' row. When the simulated users saw another answer than
the real one (the answer regenerated, a dialogue's own answer), the reference's user model is
`WEAK_HUMAN_MODEL`: the real turn answered a different message, a weaker yardstick.
"""

from __future__ import annotations

from collections.abc import Callable

from testbed.datasets import DatasetItem
from testbed.datasets.contexts import HUMAN_TURN, REAL_ANSWER, is_real_context
from testbed.loop.orchestrator import MAX_TURNS
from testbed.scenarios.base import EpisodeVariant, variant
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.transcript import Message, Transcript

HUMAN_MODE = "human"
"""The user mode of a reference episode: a real person wrote the turn."""
HUMAN_MODEL = "human"
"""The user model of a reference episode whose context is the one the simulated users saw."""
WEAK_HUMAN_MODEL = "human-other-answer"
"""The user model of a reference episode whose real answer is not the one the simulated users saw."""
REFERENCE_AGENT = "real-users"
"""The user agent of a reference episode whose context is the one the simulated users saw."""
WEAK_REFERENCE_AGENT = "real-users-other-answer"
"""The user agent of a reference episode whose real answer is not the one the simulated users saw."""
REAL_ASSISTANT = "real-assistant"
"""The speaker (and assistant agent) of a real answer shown as the assistant's turn."""
REAL_USER = "real-user"
"""The speaker of the real next turn in a reference episode."""


def has_reference(item: object) -> bool:
    """Whether `item` is a real-conversation context with a real next turn to store as its reference."""
    return isinstance(item, DatasetItem) and is_real_context(item.reference)


def real_answer(item: DatasetItem, turn_index: int) -> Message:
    """The real assistant turn that ends the item's context, as the assistant's message at `turn_index`."""
    return Message("assistant", item.reference[REAL_ANSWER], REAL_ASSISTANT, turn_index)


def reference_variant(item: DatasetItem, scenario_id: tuple, *, weak: bool) -> EpisodeVariant:
    """The reference episode's variant: its id hashes the scenario's identity and the item, never a model."""
    agent, model = (WEAK_REFERENCE_AGENT, WEAK_HUMAN_MODEL) if weak else (REFERENCE_AGENT, HUMAN_MODEL)

    def key(eid: str) -> EpisodeKey:
        return EpisodeKey(eid, item.item_id, item.dataset, REAL_ASSISTANT, REAL_ASSISTANT, agent, model,
                          HUMAN_MODE, 0.0, 0, "none")
    return variant(("human-reference", *scenario_id, item.item_id, agent), key)


def reference_outcome(item: DatasetItem, base: Transcript, v: EpisodeVariant) -> EpisodeOutcome:
    """The reference episode: `base` (system prompt and the context), the real answer, the real next turn."""
    t = Transcript(list(base.messages))
    t.append(real_answer(item, t.next_turn))
    t.append(Message("user", item.reference[HUMAN_TURN], REAL_USER, t.next_turn))
    return EpisodeOutcome(v.key, t.messages, "done", MAX_TURNS, None)


def with_reference(item: object, variants: list[EpisodeVariant], scenario_id: tuple, *, weak: bool) -> list[EpisodeVariant]:
    """`variants` with the item's reference episode first when the item is a real context, else unchanged."""
    if not has_reference(item):
        return variants
    return [reference_variant(item, scenario_id, weak=weak), *variants]


def is_reference(v: EpisodeVariant) -> bool:
    """Whether a variant is a reference episode (written by a real user, nothing to generate)."""
    return v.key.user_mode == HUMAN_MODE


async def emit_references(item: object, variants: list[EpisodeVariant], base: Callable[[], Transcript],
                          emit: Callable[[EpisodeOutcome], object]) -> list[EpisodeVariant]:
    """Store the reference episodes among `variants` and give back the ones left to generate."""
    rest = []
    for v in variants:
        if is_reference(v) and has_reference(item):
            await emit(reference_outcome(item, base(), v))
        else:
            rest.append(v)
    return rest
