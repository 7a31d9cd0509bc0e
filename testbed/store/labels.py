"""Judge and human labels of user turns: append-only, several judges side by side on the same turns.

The store knows labels only as `LabelRow`s: judges turn their verdicts into rows, so the store
imports no judge and any labeller (model, rules, human file) writes the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from testbed.store.records import JudgeIdentity, LabelRecord, LabelRow
from testbed.store.sqlite_store import Store, StoreError, now
from testbed.store.text import storable

HUMAN = "human"
"""The judge name human annotations are stored under (`human@v1:<annotator>`)."""
HUMAN_VERSION = "v1"
"""The version human annotations are stored under, whether imported or given in `testbed replay --label`."""
REVIEWED = "reviewed"
"""The judge name of reviewed labels (`testbed review`): the review's verdict where there is one, else the fast judge's."""
DEFAULT_JUDGE = "learned"
"""The judge that labels a run when none is named (`testbed run`, `judge`, `compare`, `eval-judge`): the fast judge."""
SHOWN_FIRST = (REVIEWED, DEFAULT_JUDGE, "local")
"""Labellers a face shows unasked, best first; model judges come after them and humans last."""

LABEL_COLUMNS = ["episode_id", "turn_index", "status", "label", "followup", "reason", "raw"]
"""What `labels_frame` gives per turn: the verdict without who gave it (the caller named them)."""

_LATEST = """SELECT MAX(label_id) FROM labels WHERE run_id=? {who} GROUP BY judge, judge_version, model, episode_id, turn_index"""


def write_labels(store: Store, run_id: str, who: JudgeIdentity, rows: Iterable[LabelRow]) -> None:
    """Append label rows under one identity in one transaction (a batch is stored whole or not at all)."""
    with store.conn:
        store.conn.executemany(
            "INSERT INTO labels (run_id, episode_id, turn_index, judge, judge_version, model, status, label, followup,"
            " reason, raw, attempts, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (run_id, r.episode_id, r.turn_index, who.judge, who.version, who.model, r.status, r.label,
                 None if r.followup is None else int(r.followup), storable(r.reason), storable(r.raw), r.attempts, now())
                for r in rows
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


def default_identity(store: Store, run_id: str, judge: str | None = None) -> JudgeIdentity | None:
    """The labeller a run is shown under when none is named (or several match a name), one rule for every face
    (report, replay, plot, graph, export, compare): of the identities that labelled the run (of `judge` only,
    when given), reviewed labels, then the default judge, then `local` (SHOWN_FIRST), then model judges, then
    humans, and among equals the one whose labels were written last (a newer version of a judge re-labelling the
    run wins); None when none labelled it."""
    found = _by_last_label(store, run_id, judge)
    if not found:
        return None
    rank = {name: at for at, name in enumerate(SHOWN_FIRST)} | {HUMAN: len(SHOWN_FIRST) + 1}
    return min(found, key=lambda f: (rank.get(f[0].judge, len(SHOWN_FIRST)), -f[1]))[0]


def fast_identity(store: Store, run_id: str) -> JudgeIdentity | None:
    """The labeller a report shows unasked: `default_identity`'s pick among SHOWN_FIRST only (model judges and people
    are shown when named); None when none of those labelled the run."""
    who = default_identity(store, run_id)
    if who is not None and who.judge in SHOWN_FIRST:
        return who
    found = [default_identity(store, run_id, name) for name in SHOWN_FIRST]
    return next((f for f in found if f is not None), None)


def labeller_of(store: Store, run_id: str, selector: str | None) -> JudgeIdentity:
    """The identity a selector names (`resolve_identity`), or with None the one shown unasked (`fast_identity`, else
    any labeller by `default_identity`'s rule); StoreError naming the fix when nobody labelled the run."""
    if selector is not None:
        return resolve_identity(store, run_id, selector)
    found = fast_identity(store, run_id) or default_identity(store, run_id)
    if found is None:
        raise StoreError(f"no labels on run {run_id} yet (run `testbed judge {run_id}`)")
    return found


def _by_last_label(store: Store, run_id: str, judge: str | None) -> list[tuple[JudgeIdentity, int]]:
    rows = store.conn.execute(
        "SELECT judge, judge_version, model, MAX(label_id) FROM labels WHERE run_id=? GROUP BY judge, judge_version, model", (run_id,)
    )
    return [(JudgeIdentity(*r[:3]), r[3]) for r in rows if judge is None or r[0] == judge]


def resolve_identity(store: Store, run_id: str, selector: str) -> JudgeIdentity:
    """Find the identity a selector names: `name`, `name:model`, `name@version` or `name@version:model`; when it
    names several (two versions of one judge), the one whose labels were written last (`default_identity`'s rule)."""
    head, _, model = selector.partition(":")
    name, _, version = head.partition("@")
    found = [i for i in identities(store, run_id)
             if i.judge == name and (not version or i.version == version) and (not model or i.model == model)]
    known = ", ".join(str(i) for i in identities(store, run_id)) or "none yet (run `testbed judge`)"
    if not found:
        raise StoreError(f"no labels from {selector!r} on run {run_id}; labelled by: {known}")
    if len(found) > 1:
        written = dict(_by_last_label(store, run_id, name))
        return max(found, key=lambda i: written.get(i, -1))
    return found[0]


def _latest_sql(columns: str, who: JudgeIdentity | None) -> tuple[str, tuple]:
    match, params = ("AND judge=? AND judge_version=? AND model=?", (who.judge, who.version, who.model)) if who else ("", ())
    return f"SELECT {columns} FROM labels WHERE label_id IN ({_LATEST.format(who=match)}) ORDER BY label_id", params


def labels_frame(store: Store, run_id: str, who: JudgeIdentity) -> pd.DataFrame:
    """The latest verdict of one identity per turn: episode_id, turn_index, status, label, followup, reason, raw.

    Latest, because labels are appended: a rerun that scores a turn left unscored adds a row
    above the old one, and only the newest counts.
    """
    sql, params = _latest_sql(", ".join(LABEL_COLUMNS), who)
    return pd.read_sql_query(sql, store.conn, params=(run_id, *params))


def latest_labels(store: Store, run_id: str, who: JudgeIdentity | None = None) -> list[LabelRecord]:
    """The latest verdict per turn of one identity, or of every identity when `who` is None, in the order written."""
    sql, params = _latest_sql("*", who)
    return [LabelRecord(r["episode_id"], r["turn_index"], JudgeIdentity(r["judge"], r["judge_version"], r["model"]), r["status"],
                        r["label"], None if r["followup"] is None else bool(r["followup"]), r["reason"], r["raw"],
                        r["attempts"], r["created_at"])
            for r in store.conn.execute(sql, (run_id, *params))]


def latest_labels_frame(store: Store, run_id: str, who: JudgeIdentity | None = None) -> pd.DataFrame:
    """`latest_labels` as a frame, with judge, judge_version and model columns so identities can be told apart."""
    sql, params = _latest_sql("episode_id, turn_index, judge, judge_version, model, status, label, followup, reason, raw,"
                              " attempts, created_at", who)
    return pd.read_sql_query(sql, store.conn, params=(run_id, *params))


LABEL_TUPLE = ("episode_id", "turn_index", "judge", "judge_version", "model", "status", "label", "followup", "reason", "label_id")
"""The fields of each tuple `latest_label_tuples` gives, in order."""


def latest_label_tuples(store: Store, run_id: str) -> list[tuple]:
    """The latest verdict per turn of every identity as plain tuples (`LABEL_TUPLE`), in the order written.

    For readers that hold a whole run's labels at once (the replay app): tens of thousands of
    tuples read in a fraction of the time the same `LabelRecord`s take to build.
    """
    sql, params = _latest_sql(", ".join(LABEL_TUPLE), None)
    return store.conn.execute(sql, (run_id, *params)).fetchall()
