"""Stored simulated-user faults: what a kind's per-turn fault detector found, kept with the detector's identity.

A kind whose runs have a simulated user may detect its faults turn by turn (its views' `detect_faults`). The run
loop stores them once when a run finishes, and `testbed judge` stores the faults a judge's labels imply (role
drift) under the judge's identity; report, compare, replay and figures read them here, so reading a run imports
nothing of the kind. Two tables hold them:

- `user_faults`: one row per fault (episode, user turn, kind, evidence) with the detector's name, version and model
  (`judged` 1 when the detector is a judge, whose faults are read only when that judge is asked for);
- `user_fault_checks`: one row per episode a detector checked, so an episode checked and found clean differs from
  one never checked (its task was missing, or the run finished before faults were stored).

Faults are derived data: storing an episode's faults again under a detector replaces what that detector (for rules,
any version of any rules detector) stored for the episode, so a store holds one current answer per episode and judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from testbed.store.records import JudgeIdentity
from testbed.store.text import storable

FAULT_COLUMNS = ["episode_id", "turn_index", "kind", "evidence", "detector"]
"""The columns of `faults_df`: `detector` is the detector's identity as text (`name@version[:model]`)."""


@dataclass(frozen=True)
class FaultRow:
    """One fault as a detector hands it to the store."""

    episode_id: str
    """The episode of the faulty user turn."""
    turn_index: int
    """The user turn's message index."""
    kind: str
    """The fault kind (the kind's detector names its kinds)."""
    evidence: str
    """The token, state or phrase that triggered it, short and safe to show."""


def write_faults(store, run_id: str, detector: JudgeIdentity, checked: Iterable[str], faults: Iterable[FaultRow], *,
                 judged: bool = False) -> None:
    """Store the faults `detector` found in the episodes it `checked`, in one transaction, replacing what was stored
    for those episodes before: by any rules detector (`judged` False), or by this very judge (`judged` True)."""
    episodes = list(dict.fromkeys(checked))
    written = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    whose, params = ("judged=1 AND detector=? AND detector_version=? AND model=?",
                     (detector.judge, detector.version, detector.model)) if judged else ("judged=0", ())
    with store.conn:
        for table in ("user_faults", "user_fault_checks"):
            store.conn.executemany(f"DELETE FROM {table} WHERE run_id=? AND episode_id=? AND {whose}",
                                   [(run_id, eid, *params) for eid in episodes])
        store.conn.executemany(
            "INSERT INTO user_fault_checks (run_id, episode_id, detector, detector_version, model, judged, checked_at)"
            " VALUES (?,?,?,?,?,?,?)",
            [(run_id, eid, detector.judge, detector.version, detector.model, int(judged), written) for eid in episodes])
        store.conn.executemany(
            "INSERT INTO user_faults (run_id, episode_id, turn_index, kind, evidence, detector, detector_version, model, judged)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            [(run_id, f.episode_id, f.turn_index, f.kind, storable(f.evidence), detector.judge, detector.version,
              detector.model, int(judged)) for f in faults])


def _judge_clause(judge: JudgeIdentity | None) -> tuple[str, tuple]:
    """Rule rows always; a judge's rows only for the judge asked for."""
    if judge is None:
        return "judged=0", ()
    return ("(judged=0 OR (detector=? AND detector_version=? AND model=?))", (judge.judge, judge.version, judge.model))


def faults_df(store, run_id: str, judge: JudgeIdentity | None = None) -> pd.DataFrame:
    """The run's stored faults (`FAULT_COLUMNS`) in episode and turn order, rule faults before a judge's on one turn;
    a judge's faults (role drift from its labels) only when `judge` is that judge. A store older than the table
    reads as having none."""
    if not store.has_table("user_faults"):
        return pd.DataFrame(columns=FAULT_COLUMNS).astype({"turn_index": "int64"})
    who, params = _judge_clause(judge)
    rows = store.conn.execute(
        "SELECT episode_id, turn_index, kind, evidence, detector, detector_version, model FROM user_faults"
        f" WHERE run_id=? AND {who} ORDER BY episode_id, turn_index, judged, rowid", (run_id, *params)).fetchall()
    out = [(r[0], r[1], r[2], r[3], str(JudgeIdentity(r[4], r[5], r[6]))) for r in rows]
    return pd.DataFrame(out, columns=FAULT_COLUMNS).astype({"turn_index": "int64"})


def checked_episodes(store, run_id: str, judge: JudgeIdentity | None = None) -> set[str]:
    """The episodes whose faults are stored: those the rules checked, or, with `judge`, that judge checked."""
    if not store.has_table("user_fault_checks"):
        return set()
    if judge is None:
        rows = store.conn.execute("SELECT episode_id FROM user_fault_checks WHERE run_id=? AND judged=0", (run_id,))
    else:
        rows = store.conn.execute("SELECT episode_id FROM user_fault_checks WHERE run_id=? AND judged=1 AND detector=?"
                                  " AND detector_version=? AND model=?", (run_id, judge.judge, judge.version, judge.model))
    return {r[0] for r in rows}


def fault_detectors(store, run_id: str) -> list[JudgeIdentity]:
    """The rules detectors whose faults the run holds (one, unless episodes were checked by different versions)."""
    if not store.has_table("user_fault_checks"):
        return []
    rows = store.conn.execute("SELECT detector, detector_version, model FROM user_fault_checks WHERE run_id=? AND judged=0"
                              " GROUP BY detector, detector_version, model ORDER BY MAX(checked_at)", (run_id,))
    return [JudgeIdentity(*r) for r in rows]
