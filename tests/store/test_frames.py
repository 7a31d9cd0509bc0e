"""The frame readers a notebook uses: episodes, messages, labels and generated user turns of a run."""

from __future__ import annotations

import math

import pytest

from testbed.analysis.frames import CONDITIONS
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.frames import JUDGE_COLUMNS, episodes_df, labels_df, messages_df, turns_df
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.store.sqlite_store import StoreError
from testbed.transcript import Message

LOCAL = JudgeIdentity("local", "v1")
LLM = JudgeIdentity("failure-modes", "v2", "qwen")
RUN = "dialogue-gsm8k-0123abcd"


def key(eid: str, model: str) -> EpisodeKey:
    return EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", model, "u", "m-u", "instructed", 0.7, 0, "none")


def conversation(*user_turns: str) -> list[Message]:
    msgs = [Message("system", "Be brief.", "system", 0), Message("user", "What is 6 * 7?", "dataset", 1)]
    for i, text in enumerate(user_turns):
        msgs.append(Message("assistant", f"Answer {i}: 42.", "a", len(msgs)))
        msgs.append(Message("user", text, "persona", len(msgs)))
    return msgs


@pytest.fixture
def filled(store: Store) -> Store:
    """Two finished dialogues and one that failed after one user turn; two judges, one of which relabelled a turn."""
    store.begin_run(RUN, scenario="dialogue-gsm8k", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=3)
    store.begin_run("dialogue-other", scenario="x", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=0)
    store.write_episode(RUN, EpisodeOutcome(key("e1", "model-a"), conversation("Why 42?", "Thanks"), "done", "max_turns", task_score=1.0))
    store.write_episode(RUN, EpisodeOutcome(key("e2", "model-b"), conversation("Answer 0: 42."), "done", "user_done", task_score=0.0))
    store.write_episode(RUN, EpisodeOutcome(key("e3", "model-b"), conversation("Hm?"), "error", "error", "assistant: HTTP 500"))
    ok = lambda label: Verdict(label, label == "genuine_followup", "test")  # noqa: E731
    write_labels(store, RUN, LOCAL, [label_row("e1", 3, Verdict(None, None, "bad", raw="??"), 2), label_row("e1", 5, ok("short_filler")),
                                     label_row("e2", 3, ok("echo_assistant"))])
    write_labels(store, RUN, LOCAL, [label_row("e1", 3, ok("genuine_followup"))])
    write_labels(store, RUN, LLM, [label_row("e1", 3, ok("restate_question"))])
    return store


def test_episodes_df_has_one_row_per_episode_with_every_column_and_takes_a_prefix(filled):
    frame = episodes_df(filled, "dialogue-gsm")
    assert sorted(frame.episode_id) == ["e1", "e2", "e3"]
    assert {"run_id", "item_id", *CONDITIONS, "sample_index", "status", "termination", "error_reason", "task_score",
            "prompt_tokens", "completion_tokens", "latency_s", "finished_at"} <= set(frame.columns)
    assert list(frame.status) == ["done", "done", "error"], "finished episodes first"
    with pytest.raises(StoreError, match="ambiguous"):
        episodes_df(filled, "dialogue-")
    with pytest.raises(StoreError, match="not in the store"):
        episodes_df(filled, "probe")
    assert episodes_df(filled, "probe", exact=True).empty, "a full id the store lacks is an empty run"


def test_messages_df_marks_the_generated_user_turns(filled):
    frame = messages_df(filled, RUN)
    e1 = frame[frame.episode_id == "e1"]
    assert list(e1.turn_index) == [0, 1, 2, 3, 4, 5]
    assert list(e1.generated_user_turn) == [False, False, False, True, False, True], "not the system prompt nor the request"
    assert frame.generated_user_turn.dtype == bool


def test_labels_df_keeps_the_latest_verdict_per_turn_per_identity(filled):
    local = labels_df(filled, RUN, "local").set_index(["episode_id", "turn_index"])
    assert len(local) == 3 and local.loc[("e1", 3), "label"] == "genuine_followup", "the relabelled turn's newest verdict"
    assert local.loc[("e1", 3), "status"] == "scored"
    assert labels_df(filled, RUN, LLM).label.tolist() == ["restate_question"]
    everyone = labels_df(filled, RUN)
    assert len(everyone) == 4
    assert set(zip(everyone.judge, everyone.judge_version, everyone.model)) == {("local", "v1", ""), ("failure-modes", "v2", "qwen")}
    with pytest.raises(StoreError, match="no labels from"):
        labels_df(filled, RUN, "human")


def test_turns_df_without_a_judge_gives_context_conditions_and_status(filled):
    frame = turns_df(filled, RUN)
    assert list(zip(frame.episode_id, frame.turn_index)) == [("e1", 3), ("e1", 5), ("e2", 3), ("e3", 3)]
    first = frame.iloc[1]
    assert (first.question, first.answer, first.user_turn) == ("What is 6 * 7?", "Answer 1: 42.", "Thanks")
    assert frame.set_index("episode_id").loc["e2", "assistant_model"] == "model-b"
    assert set(CONDITIONS) <= set(frame.columns) and not set(JUDGE_COLUMNS) & set(frame.columns)
    assert list(frame.status) == ["done", "done", "done", "error"], "errored episodes' turns are there, marked"
    done = frame[frame.status == "done"]
    assert list(zip(done.episode_id, done.turn_index)) == [(t.episode_id, t.turn_index) for t in filled.turns(RUN)]


def test_turns_df_with_a_judge_adds_its_latest_verdict(filled):
    frame = turns_df(filled, RUN, judge="local").set_index(["episode_id", "turn_index"])
    assert frame.loc[("e1", 3), ["judge_status", "judge_label", "judge_followup"]].tolist() == ["scored", "genuine_followup", 1]
    assert frame.loc[("e2", 3), "judge_label"] == "echo_assistant"
    assert isinstance(frame.loc[("e3", 3), "judge_status"], float) and math.isnan(frame.loc[("e3", 3), "judge_status"])
    llm = turns_df(filled, RUN, judge=LLM)
    assert llm.judge_label.notna().sum() == 1


def test_an_empty_run_gives_empty_frames_with_their_columns(filled):
    frame = turns_df(filled, "dialogue-other", judge=None)
    assert frame.empty and {"question", "answer", "user_turn", "status", *CONDITIONS} <= set(frame.columns)
    assert messages_df(filled, "dialogue-other").empty and labels_df(filled, "dialogue-other").empty
