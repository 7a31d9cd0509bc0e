"""How many requests each replica of a model served in a run, and how many it handed on (table `replica_requests`).

Counts add up over a run's invocations, like its cost: a resumed run's report shows the whole run.
"""

from __future__ import annotations

from collections.abc import Iterable

from testbed.backends.replicas import ReplicaCount
from testbed.store.text import storable


def add_replica_counts(store, run_id: str, counts: Iterable[ReplicaCount]) -> None:
    """Add one invocation's counts to the run's totals; a replica taken out keeps the last reason it was taken out."""
    rows = [(run_id, c.agent, c.url, c.served, c.retried, storable(c.out_reason)) for c in counts]
    if not rows:
        return
    with store.conn:
        store.conn.executemany(
            "INSERT INTO replica_requests (run_id, agent, url, served, retried, out_reason) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id, agent, url) DO UPDATE SET served = served + excluded.served, retried = retried + excluded.retried, "
            "out_reason = COALESCE(excluded.out_reason, out_reason)", rows)


def replica_counts(store, run_id: str) -> list[ReplicaCount]:
    """The run's per-replica totals (none for a run on single servers, or a store from before replicas)."""
    if not store.has_table("replica_requests"):
        return []
    rows = store.conn.execute("SELECT agent, url, served, retried, out_reason FROM replica_requests WHERE run_id=? ORDER BY agent, url",
                              (run_id,))
    return [ReplicaCount(r[0], r[1], int(r[2]), int(r[3]), r[4]) for r in rows]
