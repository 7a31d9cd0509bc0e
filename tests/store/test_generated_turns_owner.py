"""One rule owns "a generated user turn": the transcript function, the store's SQL and its pandas mask agree on it."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.browse import generated_turn_indices
from testbed.store.frames import episode_ends_df, messages_df
from testbed.store.generated_turns import generated_turn_keys_sql, generated_turn_mask, role_in
from testbed.transcript import GENERATED_TURNS, GeneratedTurnRule, Message, generated_user_turns

RUN = "dialogue-owner-00000000"
NAMES = {"s": "system", "u": "user", "a": "assistant"}
SHAPES = {
    "e01": ("suauau", "done"),
    "e02": ("suuuau", "done"),
    "e03": ("suaaauau", "done"),
    "e04": ("suasuau", "done"),
    "e05": ("su", "done"),
    "e06": ("suuu", "done"),
    "e07": ("sua", "done"),
    "e08": ("uauu", "done"),
    "e09": ("suauau", "error"),
    "e10": ("suu", "error"),
    "e11": ("ssauau", "done"),
    "e12": ("", "error"),
}
"""Episode shapes (s, u, a per message) and status: user turns before the first answer, several answers in a row, a
system message after the answer, no answer at all, ending on the answer, no request, errored ones, no messages."""


def outcome(eid: str, roles: str, status: str) -> EpisodeOutcome:
    key = EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", "m-a", "u", "m-u", "instructed", 0.0, 0, "none")
    messages = [Message(NAMES[r], f"{eid} {NAMES[r]} {i}", "x", i) for i, r in enumerate(roles)]
    return EpisodeOutcome(key, messages, status, "error" if status == "error" else "max_turns")


@pytest.fixture
def filled(store: Store) -> Store:
    """A run holding every shape of `SHAPES`."""
    store.begin_run(RUN, scenario="dialogue-owner", kind="dialogue", spec={}, fingerprint="f", versions={},
                    git_revision=None, planned=len(SHAPES))
    for eid, (roles, status) in SHAPES.items():
        store.write_episode(RUN, outcome(eid, roles, status))
    return store


def by_transcript(store: Store, *, finished_only: bool) -> dict[str, list[int]]:
    """The transcript rule applied to each stored episode's messages: the reference every other form must match."""
    out = {}
    for episode in store.episodes(RUN):
        if finished_only and episode.status != "done":
            continue
        turns = [m.turn_index for m in generated_user_turns(store.messages(RUN, episode.key.episode_id))]
        if turns:
            out[episode.key.episode_id] = turns
    return out


def grouped(keys) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for episode_id, turn_index in keys:
        out.setdefault(episode_id, []).append(turn_index)
    return out


def test_the_reference_selects_the_expected_turns(filled):
    expected = {"e01": [3, 5], "e02": [5], "e03": [5, 7], "e04": [4, 6], "e08": [2, 3], "e09": [3, 5], "e11": [3, 5]}
    assert by_transcript(filled, finished_only=False) == expected


def test_the_sql_readers_select_the_transcript_rule_s_turns(filled):
    everything, finished = by_transcript(filled, finished_only=False), by_transcript(filled, finished_only=True)
    assert generated_turn_indices(filled, RUN) == everything, "browse: every episode"
    assert grouped(filled.turn_keys(RUN)) == finished, "reader: finished episodes"
    assert grouped((t.episode_id, t.turn_index) for t in filled.turns(RUN)) == finished
    assert grouped((t.episode_id, t.turn_index) for t in filled.turns(RUN, include_errored=True)) == everything


def test_the_messages_frame_marks_the_transcript_rule_s_turns(filled):
    frame = messages_df(filled, RUN)
    marked = frame[frame.generated_user_turn]
    assert grouped(zip(marked.episode_id, marked.turn_index)) == by_transcript(filled, finished_only=False)
    assert frame.generated_user_turn.dtype == bool


def test_the_final_user_turn_of_episode_ends_is_a_generated_turn_after_the_last_answer(filled):
    rule = by_transcript(filled, finished_only=False)
    ends = episode_ends_df(filled, RUN).set_index("episode_id")
    for eid, (roles, _) in SHAPES.items():
        if not roles:
            assert eid not in ends.index
            continue
        last_answer = roles.rfind("a")
        turns = [t for t in rule.get(eid, []) if t > last_answer]
        final = ends.loc[eid, "user_turn_index"]
        assert (pd.isna(final) and not turns) or (final == turns[-1] == max(rule[eid])), eid


def test_every_form_follows_a_rule_taught_a_new_role():
    rule = GeneratedTurnRule(user_roles=("user",), opening_roles=("assistant", "tool"))
    roles = {"e1": ["system", "user", "tool", "user", "assistant", "user"], "e2": ["user", "user"], "e3": ["tool", "system", "user"]}
    rows = [(eid, "r", role, i) for eid, rs in roles.items() for i, role in enumerate(rs)]
    by_select = {eid: [m["turn_index"] for m in rule.select([{"role": r, "turn_index": i} for i, r in enumerate(rs)])]
                 for eid, rs in roles.items()}
    expected = {eid: turns for eid, turns in by_select.items() if turns}
    assert expected == {"e1": [3, 5], "e3": [2]}, "a tool message opens the generated part under this rule"

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (episode_id TEXT, run_id TEXT, role TEXT, turn_index INTEGER, tool_calls_json TEXT)")
    conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, NULL)", rows)
    assert grouped(conn.execute(generated_turn_keys_sql(finished_only=False, rule=rule), ("r", "r"))) == expected

    frame = pd.DataFrame(rows, columns=["episode_id", "run_id", "role", "turn_index"])
    marked = frame[generated_turn_mask(frame, rule)]
    assert grouped(zip(marked.episode_id, marked.turn_index)) == expected


def test_roles_are_spelled_into_sql_only_as_plain_names():
    assert role_in("m.role", ("user", "tool")) == "m.role IN ('user', 'tool')"
    for bad in ((), ("user'; DROP TABLE messages; --",), ("User",)):
        with pytest.raises(ValueError):
            role_in("role", bad)


def test_a_user_message_that_calls_a_tool_is_no_generated_turn_in_any_form():
    calls = '[{"id": "c1", "name": "check_status_bar", "arguments": "{}"}]'
    rows = [("e1", "r", "assistant", 0, None), ("e1", "r", "user", 1, calls), ("e1", "r", "tool", 2, None),
            ("e1", "r", "user", 3, None)]
    as_dicts = [{"role": r, "turn_index": i, "tool_calls_json": c} for _, _, r, i, c in rows]
    assert [m["turn_index"] for m in GENERATED_TURNS.select(as_dicts)] == [3]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (episode_id TEXT, run_id TEXT, role TEXT, turn_index INTEGER, tool_calls_json TEXT, "
                 "speaker TEXT DEFAULT 'x')")
    conn.executemany("INSERT INTO messages (episode_id, run_id, role, turn_index, tool_calls_json) VALUES (?, ?, ?, ?, ?)", rows)
    assert grouped(conn.execute(generated_turn_keys_sql(finished_only=False), ("r", "r"))) == {"e1": [3]}
    frame = pd.DataFrame(rows, columns=["episode_id", "run_id", "role", "turn_index", "tool_calls_json"])
    assert list(frame[generated_turn_mask(frame)].turn_index) == [3]


def test_a_dataset_s_own_conversation_neither_opens_nor_counts_in_any_form():
    """A real context's earlier answers and user turns (speaker `dataset`) are the script: only the turn after
    the first answer the dataset did not supply is generated."""
    rows = [("e1", "r", "user", 0, "dataset"), ("e1", "r", "assistant", 1, "dataset"), ("e1", "r", "user", 2, "dataset"),
            ("e1", "r", "assistant", 3, "real-assistant"), ("e1", "r", "user", 4, "real-user"),
            ("e2", "r", "user", 0, "dataset"), ("e2", "r", "assistant", 1, "dataset"), ("e2", "r", "user", 2, "dataset")]
    as_dicts = [{"role": r, "turn_index": i, "speaker": s} for e, _, r, i, s in rows if e == "e1"]
    assert [m["turn_index"] for m in GENERATED_TURNS.select(as_dicts)] == [4]
    messages = [Message(r, "t", s, i) for e, _, r, i, s in rows if e == "e1"]
    assert [m.turn_index for m in generated_user_turns(messages)] == [4]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (episode_id TEXT, run_id TEXT, role TEXT, turn_index INTEGER, speaker TEXT, "
                 "tool_calls_json TEXT)")
    conn.executemany("INSERT INTO messages (episode_id, run_id, role, turn_index, speaker) VALUES (?, ?, ?, ?, ?)", rows)
    assert grouped(conn.execute(generated_turn_keys_sql(finished_only=False), ("r", "r"))) == {"e1": [4]}
    frame = pd.DataFrame(rows, columns=["episode_id", "run_id", "role", "turn_index", "speaker"])
    assert list(frame[generated_turn_mask(frame)].turn_index) == [4]
