"""The human reference of a real-conversation context, looked up by (run, item): what the real user wrote next.

A run over real conversations stores, beside the simulated users' episodes on an item, a reference
episode whose last message is the real user's next turn (`testbed.scenarios.human_reference`). The
replay shows that turn under a simulated user's first turn on the same item; this reads it in one
indexed query when an episode is opened, rather than the whole reference episode.
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.store.reader import message_from_row
from testbed.store.sqlite_store import Store
from testbed.transcript import Message

_LAST_MESSAGES = """
SELECT e.episode_id AS reference_episode, e.user_model AS reference_model, m.*
FROM episodes e JOIN messages m ON m.run_id = e.run_id AND m.episode_id = e.episode_id
WHERE e.run_id = ? AND e.item_id = ? AND e.user_mode = ? AND e.status = 'done'
  AND m.turn_index = (SELECT MAX(turn_index) FROM messages WHERE run_id = e.run_id AND episode_id = e.episode_id)
ORDER BY e.episode_id
"""


@dataclass(frozen=True)
class ReferenceTurn:
    """The last message of one reference episode on an item, and who the reference says wrote it."""

    episode_id: str
    """The reference episode's id (browsable like any other episode)."""
    user_model: str
    """The reference's user model: whether the real turn answered the answer the simulated users saw."""
    message: Message
    """The reference episode's last message: the real user's next turn."""


def reference_turns(store: Store, run_id: str, item_id: str, *, user_mode: str) -> list[ReferenceTurn]:
    """The last message of every finished episode of the run on `item_id` whose user mode is `user_mode`
    (the reference mode), by episode id; empty when the item has no reference in the run."""
    rows = store.conn.execute(_LAST_MESSAGES, (run_id, item_id, user_mode))
    return [ReferenceTurn(r["reference_episode"], r["reference_model"], message_from_row(r)) for r in rows]
