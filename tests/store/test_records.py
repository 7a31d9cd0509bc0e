"""The store's typed readers: runs, episodes, messages, generated user turns, outcomes and labels as records."""

from __future__ import annotations

import ast
import inspect
import sqlite3
from dataclasses import fields

import pytest

from testbed.judges.turns import label_row, user_turns
from testbed.judges.verdict import Verdict
from testbed.conversation_context import Earlier
from testbed.store import EpisodeKey, EpisodeOutcome, EpisodeReward, SharedAnswer, Store, records
from testbed.store.labels import JudgeIdentity, latest_labels, write_labels
from testbed.store.records import FailedAttempt, LabelRow, RunRecord, TurnRecord
from testbed.store.sqlite_store import StoreError
from testbed.transcript import ASSISTANT, USER, Message, ToolCall, ToolResult, Usage, generated_user_turns

WHO = JudgeIdentity("local", "v1")


def key(eid: str, **changes) -> EpisodeKey:
    fields_ = dict(episode_id=eid, item_id=f"item-{eid}", dataset="gsm8k", assistant_agent="a", assistant_model="m-a",
                   user_agent="u", user_model="m-u", user_mode="instructed", temperature=0.7, sample_index=0, perturbation="none")
    fields_.update(changes)
    return EpisodeKey(**fields_)


def dialogue(*texts: tuple[str, str]) -> list[Message]:
    return [Message(role, text, role, i) for i, (role, text) in enumerate(texts)]


OPENING = dialogue(("system", "Be brief."), ("user", "What is 6 * 7?"), ("user", "Show your steps."),
                   ("assistant", "6 * 7 = 42."), ("user", "Why 42?"), ("assistant", "Six sevens."), ("user", "Thanks"))
"""A system prompt, two scripted opening user turns, then two turns the simulated user wrote."""


def begin(store: Store, run_id: str = "run-1", kind: str = "dialogue") -> None:
    store.begin_run(run_id, scenario="s", kind=kind, spec={"name": "s"}, fingerprint="f", versions={"testbed": "0"},
                    git_revision=None, planned=3)


def test_generated_user_turns_are_the_user_messages_after_the_first_assistant_message():
    assert [m.turn_index for m in generated_user_turns(OPENING)] == [4, 6], "system prompt and opening turns are not the user's"
    as_dicts = [{"role": m.role, "turn_index": m.turn_index} for m in OPENING]
    assert generated_user_turns(as_dicts) == [as_dicts[4], as_dicts[6]], "dicts work alike and come back as given"
    assert generated_user_turns(dialogue(("system", "x"), ("user", "q"))) == [], "no assistant message, no generated turn"
    probe = dialogue(("user", "q"), ("assistant", "a"), ("user", "follow-up"))
    assert [m.content for m in generated_user_turns(probe)] == ["follow-up"]


def test_turns_carry_the_request_and_the_latest_answer_of_finished_episodes_only(store):
    begin(store)
    store.write_episode("run-1", EpisodeOutcome(key("b"), OPENING, "done", "max_turns"))
    store.write_episode("run-1", EpisodeOutcome(key("a"), OPENING[:5], "done", "user_done"))
    store.write_episode("run-1", EpisodeOutcome(key("c"), OPENING, "error", "error", "user: HTTP 500"))
    turns = store.turns("run-1")
    assert [(t.episode_id, t.turn_index) for t in turns] == [("a", 4), ("b", 4), ("b", 6)], "done episodes, stable order"
    assert turns[2] == TurnRecord("b", 6, "What is 6 * 7?", "Six sevens.", "Thanks", (
        Earlier(USER, "Show your steps."), Earlier(ASSISTANT, "6 * 7 = 42."), Earlier(USER, "Why 42?"))), "the conversation between request and answer"
    assert turns[1].context == (Earlier(USER, "Show your steps."),)
    assert turns[1].answer == "6 * 7 = 42." and turns[1].turn_id == "b:4"
    assert [t.episode_id for t in store.turns("run-1", include_errored=True)].count("c") == 2
    wrapped = user_turns(store, "run-1")
    assert [(w.episode_id, w.turn_index, w.item.turn_id, w.item.question, w.item.assistant, w.item.user_turn) for w in wrapped] == [
        (t.episode_id, t.turn_index, t.turn_id, t.question, t.answer, t.user_turn) for t in turns]


def test_run_record_has_the_schema_version_first_and_reads_like_the_old_dict(store):
    begin(store, "probe-abc123", kind="probe")
    assert fields(RunRecord)[0].name == "schema_version"
    run = store.run("probe-abc")
    assert run.run_id == "probe-abc123" and run.schema_version == store.schema_version and run.status == "running"
    assert (run.spec, run.versions, run.planned_episodes) == ({"name": "s"}, {"testbed": "0"}, 3)
    assert run["kind"] == "probe" and run["status"] == run.status
    with pytest.raises(KeyError):
        run["spec_json"]
    assert store.find_run("probe-abc") is None, "find_run takes an exact id only"
    assert store.find_run("probe-abc123") == run
    with pytest.raises(StoreError, match="not in the store"):
        store.run("dialogue")


def test_episode_and_message_records_round_trip(store):
    begin(store)
    msgs = [Message("user", "q", "dataset", 0), Message("assistant", "a", "bot", 1, sampling={"temperature": 0.0},
                                                        usage=Usage(3, 4, 0.5), finish_reason="stop")]
    store.write_episode("run-1", EpisodeOutcome(key("e1"), msgs, "done", "max_turns", None, 1.0, Usage(3, 4, 0.5)))
    store.write_episode("run-1", EpisodeOutcome(key("e2", temperature=0.0), msgs[:1], "error", "error", "assistant: HTTP 500"))
    [done, failed] = store.episodes("run-1")
    assert done.key == key("e1") and done.episode_id == "e1" and done.usage == Usage(3, 4, 0.5) and done.task_score == 1.0
    assert (failed.status, failed.termination, failed.error_reason) == ("error", "error", "assistant: HTTP 500")
    assert store.messages("run-1", "e1") == msgs
    assert store.messages("run-1", "nope") == [] and store.episodes("run-unknown") == []
    assert store.episode_counts("run-1") == {"done": 1, "error": 1}
    assert store.episode_counts("run-unknown") == {"done": 0, "error": 0}
    assert store.error_reasons("run-1") == [("assistant: HTTP 500", 1)]


def test_shared_answers_come_back_as_records(store):
    begin(store, kind="probe")
    msg = Message("assistant", "4", "bot", 1, sampling={"temperature": 0.0}, usage=Usage(1, 2, 0.1), finish_reason="stop")
    store.write_shared_answer("run-1", SharedAnswer("ans-1", "item-1", msg, 1.0))
    stored = store.shared_answers("run-1")["ans-1"]
    assert (stored.answer_id, stored.item_id, stored.task_score) == ("ans-1", "item-1", 1.0)
    assert stored.message == Message("assistant", "4", "", 0, sampling={"temperature": 0.0}, usage=Usage(1, 2, 0.1), finish_reason="stop")


def test_failed_attempts_keep_every_errored_attempt_that_a_retry_replaced(store):
    begin(store)
    store.write_episode("run-1", EpisodeOutcome(key("e1"), OPENING[:2], "error", "error", "user: HTTP 500"))
    store.write_episode("run-1", EpisodeOutcome(key("e1"), OPENING[:4], "error", "error", "user: timeout"))
    assert store.failed_attempts("run-1") == [FailedAttempt("run-1", "e1", 1, "error", "user: HTTP 500", 2,
                                                            store.failed_attempts("run-1")[0].finished_at)]
    assert store.write_episode("run-1", EpisodeOutcome(key("e1"), OPENING, "done", "max_turns")) is True
    assert store.write_episode("run-1", EpisodeOutcome(key("e1"), OPENING[:2], "error", "error", "late")) is False
    attempts = store.failed_attempts("run-1")
    assert [(a.attempt, a.error_reason, a.messages) for a in attempts] == [(1, "user: HTTP 500", 2), (2, "user: timeout", 4)]
    assert store.episode_counts("run-1") == {"done": 1, "error": 0}, "the episode itself holds the outcome that finished"
    assert store.failed_attempts("run-other") == []


def test_a_store_without_the_failed_attempts_table_reads_as_none_and_gains_it_on_write(tmp_path):
    path = tmp_path / "old.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE failed_attempts")
        conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    old = Store(path, readonly=True)
    assert old.failed_attempts("run-1") == [] and old.schema_version == 2
    old.close()
    upgraded = Store(path)
    assert upgraded.has_table("failed_attempts") and upgraded.schema_version > 2
    upgraded.close()


def test_label_rows_round_trip_and_the_latest_verdict_per_turn_wins(store):
    begin(store)
    store.write_episode("run-1", EpisodeOutcome(key("e1"), OPENING, "done", "max_turns"))
    write_labels(store, "run-1", WHO, [label_row("e1", 4, Verdict(None, None, "unparseable", raw="??"), 3),
                                       label_row("e1", 6, Verdict("short_filler", False, "thanks"))])
    write_labels(store, "run-1", WHO, [LabelRow("e1", 4, "scored", "genuine_followup", True, "asks why")])
    write_labels(store, "run-1", JudgeIdentity("human", "v1", "ann"), [LabelRow("e1", 4, "scored", "other", False, "h")])
    mine = latest_labels(store, "run-1", WHO)
    assert [(r.turn_index, r.status, r.label, r.followup, r.attempts) for r in mine] == [
        (6, "scored", "short_filler", False, 1), (4, "scored", "genuine_followup", True, 1)]
    assert all(r.who == WHO and r.created_at for r in mine)
    everyone = latest_labels(store, "run-1")
    assert sorted(str(r.who) for r in everyone) == ["human@v1:ann", "local@v1", "local@v1"]
    unscored = label_row("e1", 4, Verdict(None, None, "unparseable", raw="??"), 3)
    assert (unscored.status, unscored.label, unscored.followup, unscored.raw, unscored.attempts) == ("unscored", None, None, "??", 3)


def test_every_field_of_a_store_record_has_a_docstring():
    tree = ast.parse(inspect.getsource(records))
    missing = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        body = cls.body
        for i, node in enumerate(body):
            if isinstance(node, ast.AnnAssign):
                after = body[i + 1] if i + 1 < len(body) else None
                if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                    missing.append(f"{cls.name}.{node.target.id}")
    assert missing == []


def test_a_version_4_store_gains_tool_messages_and_rewards_with_its_messages_kept(tmp_path):
    path = tmp_path / "v4.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.executescript("""DROP TABLE messages; DROP TABLE episode_rewards;
            CREATE TABLE messages (run_id TEXT NOT NULL, episode_id TEXT NOT NULL, turn_index INTEGER NOT NULL,
              role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')), speaker TEXT NOT NULL, content TEXT NOT NULL,
              sampling_json TEXT, prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
              latency_s REAL NOT NULL DEFAULT 0, finish_reason TEXT, reused_from TEXT, PRIMARY KEY (run_id, episode_id, turn_index));
            UPDATE meta SET value='4' WHERE key='schema_version';""")
        conn.execute("INSERT INTO runs VALUES ('old', 's', 'dialogue', '{}', 'f', '{}', NULL, 'now', NULL, 'done', 1)")
        conn.execute("INSERT INTO episodes (run_id, episode_id, item_id, dataset, assistant_agent, assistant_model, user_agent, "
                     "user_model, user_mode, temperature, sample_index, perturbation, status, finished_at) "
                     "VALUES ('old', 'e', 'i', 'd', 'a', 'm', 'u', 'm', 'instructed', 0.7, 0, 'none', 'done', 'now')")
        conn.execute("INSERT INTO messages (run_id, episode_id, turn_index, role, speaker, content) VALUES ('old', 'e', 0, 'user', 'u', 'hi')")
    store = Store(path)
    assert [m.content for m in store.messages("old", "e")] == ["hi"]
    begin(store)
    call = ToolCall("c1", "get_user", '{"id": 3}')
    messages = [Message("assistant", "Hi!", "a", 0), Message("user", "Book it.", "u", 1),
                Message("assistant", "", "a", 2, tool_calls=(call,)),
                Message("tool", '{"name": "Ann"}', "environment", 3, tool_result=ToolResult("c1", "get_user", "assistant", False)),
                Message("assistant", "Done.", "a", 4)]
    reward = EpisodeReward(1.0, {"DB": 1.0}, {"actions": [True]})
    store.write_episode("run-1", EpisodeOutcome(key("t"), messages, "done", "user_stop", reward=reward))
    store.commit()
    assert store.messages("run-1", "t") == messages
    assert store.rewards("run-1") == {"t": reward}
    assert [t.turn_index for t in store.turns("run-1")] == [1]
    store.close()
