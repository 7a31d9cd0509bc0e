"""Judge and human labels of user turns: append-only, several judges side by side on the same turns."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from testbed.judges.verdict import Verdict
from testbed.store.sqlite_store import Store, StoreError, now

HUMAN = "human"


@dataclass(frozen=True)
class JudgeIdentity:
    """Who labelled: judge name, prompt/rules version, and the model (or annotator) behind it."""

    judge: str
    version: str
    model: str = ""

    def __str__(self) -> str:
        return f"{self.judge}@{self.version}" + (f":{self.model}" if self.model else "")


def write_labels(store: Store, run_id: str, who: JudgeIdentity, rows: list[tuple[str, int, Verdict, int]]) -> None:
    """Append verdicts `(episode_id, turn_index, verdict, attempts)` in one transaction."""
    with store.conn:
        store.conn.executemany(
            "INSERT INTO labels (run_id, episode_id, turn_index, judge, judge_version, model, status, label, followup,"
            " reason, raw, attempts, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (run_id, eid, turn, who.judge, who.version, who.model, "scored" if v.scored else "unscored", v.label,
                 None if v.followup is None else int(v.followup), v.reason, v.raw, attempts, now())
                for eid, turn, v, attempts in rows
            ],
        )


def judged_turns(store: Store, run_id: str, who: JudgeIdentity, *, scored_only: bool = False) -> set[tuple[str, int]]:
    """Turns this judge identity has already labelled (scored only, if asked): a rerun skips them."""
    sql = "SELECT DISTINCT episode_id, turn_index FROM labels WHERE run_id=? AND judge=? AND judge_version=? AND model=?"
    if scored_only:
        sql += " AND status='scored'"
    return {(r[0], r[1]) for r in store.conn.execute(sql, (run_id, who.judge, who.version, who.model))}


def identities(store: Store, run_id: str) -> list[JudgeIdentity]:
    """Every judge identity that labelled turns of the run."""
    rows = store.conn.execute(
        "SELECT DISTINCT judge, judge_version, model FROM labels WHERE run_id=? ORDER BY judge, judge_version, model", (run_id,)
    )
    return [JudgeIdentity(*r) for r in rows]


def resolve_identity(store: Store, run_id: str, selector: str) -> JudgeIdentity:
    """Find the one identity a selector names: `name`, `name:model`, `name@version` or `name@version:model`."""
    head, _, model = selector.partition(":")
    name, _, version = head.partition("@")
    found = [i for i in identities(store, run_id)
             if i.judge == name and (not version or i.version == version) and (not model or i.model == model)]
    known = ", ".join(str(i) for i in identities(store, run_id)) or "none yet (run `testbed judge`)"
    if not found:
        raise StoreError(f"no labels from {selector!r} on run {run_id}; labelled by: {known}")
    if len(found) > 1:
        raise StoreError(f"{selector!r} matches several labellers on run {run_id} ({', '.join(map(str, found))}): name one as judge@version:model")
    return found[0]


def labels_frame(store: Store, run_id: str, who: JudgeIdentity) -> pd.DataFrame:
    """The latest verdict of one identity per turn: episode_id, turn_index, status, label, followup, reason, raw."""
    return pd.read_sql_query(
        """SELECT episode_id, turn_index, status, label, followup, reason, raw FROM labels
           WHERE label_id IN (SELECT MAX(label_id) FROM labels WHERE run_id=? AND judge=? AND judge_version=? AND model=?
                              GROUP BY episode_id, turn_index)""",
        store.conn, params=(run_id, who.judge, who.version, who.model),
    )
