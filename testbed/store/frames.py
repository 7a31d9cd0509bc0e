"""A run as pandas frames, for notebooks and reports: episodes, messages, labels and user turns.

Each reader takes a `Store` and a run id (a unique prefix is enough, as for `Store.run`), so

    from testbed.store import Store
    from testbed.store.frames import turns_df
    turns_df(Store("runs.sqlite", readonly=True), "dialogue-gsm8k", judge="local")

gives every generated user turn with its context, conditions and the local judge's verdict,
with no SQL and no knowledge of the tables. An unknown or ambiguous run is a StoreError naming
the runs there are. Code that already holds a full run id (reports) passes `exact=True`: the id
is used as given, and a run not in the store gives empty frames, as an empty run does.
"""

from __future__ import annotations

import pandas as pd

from testbed.store.generated_turns import generated_turn_mask, opening_role_sql, request_sql, user_role_sql
from testbed.store.labels import latest_labels_frame, resolve_identity
from testbed.store.reader import EPISODE_ORDER
from testbed.store.records import CONDITIONS, JudgeIdentity
from testbed.store.sqlite_store import Store

TURN_COLUMNS = ["episode_id", "turn_index", "question", "answer", "user_turn"]
"""The columns of a generated user turn with its context (the fields of `TurnRecord`)."""

EPISODE_COLUMNS = ["item_id", *CONDITIONS, "sample_index", "status"]
"""What `turns_df` adds of each turn's episode: which item, under which conditions, how it ended."""

JUDGE_COLUMNS = ["judge_status", "judge_label", "judge_followup", "judge_reason"]
"""What `turns_df` adds of one judge's latest verdict on each turn (NaN where it gave none)."""


def run_id_of(store: Store, run: str, exact: bool = False) -> str:
    """The full id of the run `run` names: the exact id, or a unique prefix (StoreError otherwise); as given when `exact`."""
    return run if exact else store.run(run).run_id


def identity_of(store: Store, run_id: str, judge: JudgeIdentity | str) -> JudgeIdentity:
    """A judge given as an identity, or as a selector (`local`, `name:model`, `name@version`) resolved on the run."""
    return judge if isinstance(judge, JudgeIdentity) else resolve_identity(store, run_id, judge)


def episodes_df(store: Store, run: str, *, exact: bool = False) -> pd.DataFrame:
    """One row per episode with every stored episode column (errored episodes too), finished ones first."""
    return pd.read_sql_query(f"SELECT * FROM episodes WHERE run_id=? ORDER BY {EPISODE_ORDER}", store.conn,
                             params=(run_id_of(store, run, exact),))


def messages_df(store: Store, run: str, *, exact: bool = False) -> pd.DataFrame:
    """One row per message of every episode, in episode and turn order, with every stored message column.

    `generated_user_turn` marks the messages the simulated user wrote
    (`testbed.transcript.generated_user_turns`), the turns judges label.
    """
    frame = pd.read_sql_query("SELECT * FROM messages WHERE run_id=? ORDER BY episode_id, turn_index", store.conn,
                              params=(run_id_of(store, run, exact),))
    frame["generated_user_turn"] = generated_turn_mask(frame)
    return frame


def episode_ends_df(store: Store, run: str, *, exact: bool = False) -> pd.DataFrame:
    """One row per episode with messages: its request and its final user turn, aggregated in SQL.

    Columns: episode_id; `question`, the request (`testbed.transcript.request_message`); `user_turn`, `user_turn_tokens` and
    `user_turn_index`, the last user message when it comes after the last assistant message (so a
    generated user turn, `testbed.transcript.generated_user_turns`), else NULL. What a probe report
    needs of each transcript, without reading every message of a large run into memory.
    """
    run_id = run_id_of(store, run, exact)
    return pd.read_sql_query(_EPISODE_ENDS, store.conn, params=(run_id, run_id, run_id))


_EPISODE_ENDS = f"""SELECT s.episode_id, q.content AS question, u.content AS user_turn,
       u.completion_tokens AS user_turn_tokens, u.turn_index AS user_turn_index
FROM (SELECT episode_id, MIN(CASE WHEN {request_sql()} THEN turn_index END) AS request,
             MAX(CASE WHEN {user_role_sql()} THEN turn_index END) AS last_user,
             MAX(CASE WHEN {opening_role_sql()} THEN turn_index END) AS last_answer
      FROM messages WHERE run_id=? GROUP BY episode_id) s
LEFT JOIN messages q ON q.run_id=? AND q.episode_id=s.episode_id AND q.turn_index=s.request
LEFT JOIN messages u ON u.run_id=? AND u.episode_id=s.episode_id AND u.turn_index=s.last_user AND s.last_user > s.last_answer
ORDER BY s.episode_id"""


def labels_df(store: Store, run: str, judge: JudgeIdentity | str | None = None, *, exact: bool = False) -> pd.DataFrame:
    """The latest verdict per turn and judge identity: episode_id, turn_index, judge, judge_version, model,
    status, label, followup (1, 0 or NaN), reason, raw, attempts, created_at.

    `judge` keeps one identity (a JudgeIdentity or a selector such as "local"); None keeps all of
    them side by side, told apart by the judge, judge_version and model columns.
    """
    run_id = run_id_of(store, run, exact)
    who = identity_of(store, run_id, judge) if judge is not None else None
    return latest_labels_frame(store, run_id, who)


def turns_df(store: Store, run: str, judge: JudgeIdentity | str | None = None, *, exact: bool = False) -> pd.DataFrame:
    """One row per generated user turn: its context (question, answer, user_turn), its episode's item,
    conditions and status, and, when `judge` is given, that judge's latest verdict (judge_status,
    judge_label, judge_followup, judge_reason; NaN where it gave none).

    Turns of errored episodes are included, so what a user wrote before a failure can be read;
    `status == "done"` keeps exactly the turns that judges label (`Store.turns`).
    """
    run_id = run_id_of(store, run, exact)
    turns = pd.DataFrame([(t.episode_id, t.turn_index, t.question, t.answer, t.user_turn)
                          for t in store.turns(run_id, include_errored=True)], columns=TURN_COLUMNS)
    turns = turns.astype({"turn_index": "int64"})
    episodes = episodes_df(store, run_id, exact=True)[["episode_id", *EPISODE_COLUMNS]]
    frame = turns.merge(episodes, on="episode_id", how="left")
    if judge is None:
        return frame
    labels = labels_df(store, run_id, judge, exact=True)[["episode_id", "turn_index", "status", "label", "followup", "reason"]]
    labels = labels.rename(columns=dict(zip(["status", "label", "followup", "reason"], JUDGE_COLUMNS)))
    return frame.merge(labels, on=["episode_id", "turn_index"], how="left")
