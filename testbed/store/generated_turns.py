"""The store's forms of `testbed.transcript.GENERATED_TURNS` (SQL over the messages table, and a mask over its frame)
and of the episode's request (`testbed.transcript.request_message`).

Queries and frames that pick generated user turns build their conditions here, from the rule's
declared roles, so they select exactly the turns `generated_user_turns` selects and follow the rule
when it learns a role.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from testbed.transcript import GENERATED_TURNS, TOOL_CALLS_COLUMN, USER, GeneratedTurnRule

if TYPE_CHECKING:
    import pandas as pd

_ROLE_NAME = re.compile(r"[a-z_]+")


def role_in(column: str, roles: Sequence[str]) -> str:
    """SQL that is true where `column` holds one of `roles` (`role IN ('user')`); roles are spelled inline."""
    bad = [r for r in roles if not _ROLE_NAME.fullmatch(r)]
    if bad or not roles:
        raise ValueError(f"roles must be one or more lower-case names, got {list(roles)!r}")
    quoted = ", ".join(f"'{r}'" for r in roles)
    return f"{column} IN ({quoted})"


def user_role_sql(column: str = "role", rule: GeneratedTurnRule = GENERATED_TURNS) -> str:
    """SQL that is true where `column` is a role whose messages count as the simulated user speaking."""
    return role_in(column, rule.user_roles)


def opening_role_sql(column: str = "role", rule: GeneratedTurnRule = GENERATED_TURNS) -> str:
    """SQL that is true where `column` is a role whose first message opens the generated part."""
    return role_in(column, rule.opening_roles)


def unscripted_sql(column: str = "speaker", rule: GeneratedTurnRule = GENERATED_TURNS) -> str:
    """SQL that is true where `column` is not one of the rule's scripted speakers (always true when it has none)."""
    if not rule.scripted_speakers:
        return "1"
    bad = [s for s in rule.scripted_speakers if not _ROLE_NAME.fullmatch(s)]
    if bad:
        raise ValueError(f"scripted speakers must be lower-case names, got {list(rule.scripted_speakers)!r}")
    return f"{column} NOT IN ({', '.join(repr(s) for s in rule.scripted_speakers)})"


def request_sql(table: str = "") -> str:
    """SQL that is true where a message is a candidate for its episode's request (`testbed.transcript.request_message`:
    a user message calling no tool); the request is the one with the lowest turn index. `table` prefixes the columns."""
    prefix = f"{table}." if table else ""
    return f"{role_in(prefix + 'role', (USER,))} AND {prefix}{TOOL_CALLS_COLUMN} IS NULL"


def generated_turn_keys_sql(*, finished_only: bool, rule: GeneratedTurnRule = GENERATED_TURNS) -> str:
    """A query of (episode_id, turn_index) of a run's generated user turns, by episode id and turn index.

    Its parameters are (run_id, run_id). `finished_only` keeps the turns of finished episodes, the
    ones judges label; without it every episode's turns are given, errored ones too.
    """
    join = "JOIN episodes e ON e.run_id = m.run_id AND e.episode_id = m.episode_id" if finished_only else ""
    done = "AND e.status='done'" if finished_only else ""
    return f"""SELECT m.episode_id, m.turn_index FROM messages m {join}
    JOIN (SELECT episode_id, MIN(turn_index) AS first_answer FROM messages
          WHERE run_id=? AND {opening_role_sql("role", rule)} AND {unscripted_sql("speaker", rule)}
          GROUP BY episode_id) a ON a.episode_id = m.episode_id
    WHERE m.run_id=? {done} AND {user_role_sql("m.role", rule)} AND {unscripted_sql("m.speaker", rule)}
      AND m.{TOOL_CALLS_COLUMN} IS NULL AND m.turn_index > a.first_answer
    ORDER BY m.episode_id, m.turn_index"""


def generated_turn_mask(frame: pd.DataFrame, rule: GeneratedTurnRule = GENERATED_TURNS) -> pd.Series:
    """Whether each row of a messages frame (episode_id, role, turn_index columns; the tool-calls column where
    it has one) is a generated user turn."""
    unscripted = ~frame.speaker.isin(rule.scripted_speakers) if "speaker" in frame and rule.scripted_speakers else True
    first_answer = frame.turn_index.where(frame.role.isin(rule.opening_roles) & unscripted).groupby(frame.episode_id).transform("min")
    speaks = frame[TOOL_CALLS_COLUMN].isna() if TOOL_CALLS_COLUMN in frame else True
    return (frame.role.isin(rule.user_roles) & speaks & unscripted & (frame.turn_index > first_answer)).astype(bool)
