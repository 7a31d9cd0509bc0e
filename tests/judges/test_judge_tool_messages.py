"""Judges read a user turn in the context the simulated user saw: the spoken answer, never a tool call or a tool's
result, and a user's own tool call is never a turn to judge."""

from __future__ import annotations

import pytest

from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.judges.turns import user_turns
from testbed.store import Store
from testbed.store.labels import latest_labels
from testbed.store.reader import episode_turns
from testbed.store.tool_messages import tool_columns
from testbed.transcript import TOOL_CALLS_COLUMN, Message, ToolCall, ToolResult
from tool_episode import ANSWER, EPISODE, GREETING, LONG_RESULT, MESSAGES, REQUEST, RUN, USER_TURN, build_tool_store

HIDDEN = ("unlimited-", "RESULT-THE-USER-SAW", "SYSTEM-ONLY-WORDS", "no such tool", "get_customer_by_phone", "toggle_airplane")
"""Text only tool traffic or the system prompt holds: no judge may see it."""


@pytest.fixture
def store(tmp_path):
    s = Store(build_tool_store(tmp_path, labelled=False))
    yield s
    s.close()


def test_turns_are_the_spoken_user_messages_each_with_the_spoken_answer_before_it(store):
    turns = user_turns(store, RUN)
    assert [(t.episode_id, t.turn_index) for t in turns] == [(EPISODE, 2), (EPISODE, 9)] == list(map(tuple, store.turn_keys(RUN)))
    assert [(t.item.question, t.item.assistant, t.item.user_turn) for t in turns] == [
        (REQUEST, GREETING, REQUEST), (REQUEST, ANSWER, USER_TURN)]


def test_a_tool_result_or_a_call_with_text_is_never_the_answer():
    calling = Message("assistant", "Let me check that.", "agent", 3, {"temperature": 0.0},
                      tool_calls=(ToolCall("c", "get_line", "{}"),))
    messages = [*MESSAGES[:3], calling, Message("tool", LONG_RESULT, "environment", 4, tool_result=ToolResult("c", "get_line")),
                Message("user", "Hello?", "user", 5, {"temperature": 0.0})]
    rows = [{"role": m.role, "turn_index": m.turn_index, "content": m.content, TOOL_CALLS_COLUMN: tool_columns(m)[0]}
            for m in messages]
    turns = episode_turns(EPISODE, rows)
    assert [(t.turn_index, t.answer) for t in turns] == [(2, GREETING), (5, GREETING)]


async def test_a_model_judge_is_prompted_with_spoken_text_only_and_labels_only_spoken_turns(store):
    prompts = []

    def reply(request) -> str:
        prompts.append(request.messages[0]["content"])
        return '{"label": "genuine_followup", "reason": "asks on"}'

    summary = await judge_run(store, RUN, load_judge("failure-modes"), backend=ScriptedBackend(reply), show_progress=False)
    assert (summary.turns, summary.scored, summary.unscored) == (2, 2, 0)
    assert len(prompts) == 2 and any(ANSWER in p and USER_TURN in p for p in prompts)
    for prompt in prompts:
        assert not [h for h in HIDDEN if h in prompt], prompt
    labelled = sorted(r.turn_index for r in latest_labels(store, RUN, summary.identity))
    assert labelled == [2, 9]


@pytest.mark.parametrize("judge", ["local", "learned"])
async def test_the_local_and_learned_judges_label_the_two_spoken_turns(store, judge):
    summary = await judge_run(store, RUN, load_judge(judge), show_progress=False)
    assert (summary.turns, summary.scored + summary.unscored) == (2, 2)
    assert sorted(r.turn_index for r in latest_labels(store, RUN, summary.identity)) == [2, 9]
