"""Reads for browsing a store interactively: whole runs at once, in a few indexed queries.

The replay app opens a run of 10,000 episodes and 100,000 messages; reading it episode by episode
through `Store.messages` would take seconds. These readers fetch exactly what the episode table
and the labelling queue need, in one query each, and leave the rest to be read per episode.
"""

from __future__ import annotations

from collections import defaultdict

from testbed.store.generated_turns import generated_turn_keys_sql
from testbed.store.sqlite_store import Store

_GENERATED = generated_turn_keys_sql(finished_only=False)


def generated_turn_indices(store: Store, run_id: str) -> dict[str, list[int]]:
    """Every episode's generated user turns (`testbed.transcript.generated_user_turns`) as turn indices, in order.

    Episodes without one (no assistant message yet, or none after it) are absent.
    """
    out: dict[str, list[int]] = defaultdict(list)
    for episode_id, turn_index in store.conn.execute(_GENERATED, (run_id, run_id)):
        out[episode_id].append(turn_index)
    return dict(out)


def message_counts(store: Store, run_id: str) -> dict[str, int]:
    """Messages stored per episode."""
    rows = store.conn.execute("SELECT episode_id, COUNT(*) FROM messages WHERE run_id=? GROUP BY episode_id", (run_id,))
    return dict(rows.fetchall())


def episodes_containing(store: Store, run_id: str, text: str) -> set[str]:
    """Episodes with a message whose text contains `text` (case-insensitive for ASCII letters, as SQLite's LIKE)."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = store.conn.execute("SELECT DISTINCT episode_id FROM messages WHERE run_id=? AND content LIKE ? ESCAPE '\\'",
                              (run_id, pattern))
    return {r[0] for r in rows}

