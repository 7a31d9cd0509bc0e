"""The LangGraph adapter on a real HTTP server: the simulated user's swapped-role view, the assistant's true
roles, the sampling each ChatOpenAI client sends, and the scenario's stops as the graph's conditional edges."""

from __future__ import annotations

import mock_openai
import pytest
from conftest import ASSISTANT_PROMPT, PERSONA, make_pair, opening

from testbed.backends.base import BackendError
from testbed.frameworks import framework
from testbed.loop.orchestrator import Limits, TerminationReason
from testbed.transcript import Message, Transcript

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

QUESTION = "What is 2 + 3?"


def roles_and_contents(request: dict) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request["messages"]]


def assistant_done(reply: Message, t: Transcript) -> TerminationReason:
    return TerminationReason.ASSISTANT_DONE


async def run(mock, limits: Limits, **kwargs) -> tuple[TerminationReason, Transcript]:
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    reason = await framework("langgraph").converse(t, assistant, user, limits, **kwargs)
    return reason, t


async def test_the_simulated_user_sees_the_persona_and_the_conversation_with_roles_swapped(mock):
    await run(mock, Limits(max_user_turns=3))
    r = mock.replies
    assert roles_and_contents(mock.requests[1]) == [("system", PERSONA), ("assistant", QUESTION), ("user", r[0])]
    assert roles_and_contents(mock.requests[3]) == [
        ("system", PERSONA), ("assistant", QUESTION), ("user", r[0]), ("assistant", r[1]), ("user", r[2])]


async def test_the_assistant_sees_its_system_prompt_first_and_true_roles(mock):
    await run(mock, Limits(max_user_turns=3))
    r = mock.replies
    assert roles_and_contents(mock.requests[0]) == [("system", ASSISTANT_PROMPT), ("user", QUESTION)]
    assert roles_and_contents(mock.requests[4]) == [
        ("system", ASSISTANT_PROMPT), ("user", QUESTION), ("assistant", r[0]), ("user", r[1]), ("assistant", r[2]),
        ("user", r[3])]


async def test_an_assistant_without_a_system_prompt_gets_no_system_message(mock):
    assistant, user = make_pair(mock.base_url, assistant_prompt=None)
    t = opening(QUESTION, system=None)
    await framework("langgraph").converse(t, assistant, user, Limits(max_user_turns=2))
    assert roles_and_contents(mock.requests[0]) == [("user", QUESTION)]
    assert mock.requests[1]["messages"][0] == {"role": "system", "content": PERSONA}


async def test_each_client_sends_its_sides_sampling_and_the_transcript_records_it(mock):
    reason, t = await run(mock, Limits(max_user_turns=3))
    assistant_requests, user_requests = mock.requests[0::2], mock.requests[1::2]
    assert len(assistant_requests) == 3 and len(user_requests) == 2
    for q in assistant_requests:
        assert (q["model"], q["temperature"], q["max_completion_tokens"], q["top_p"]) == ("mock", 0.0, 64, 1.0)
        assert "seed" not in q, "the assistant's spec has no seed, so none is sent"
    for q in user_requests:
        sent = (q["temperature"], q["max_completion_tokens"], q["top_p"], q["seed"])
        assert sent == (0.7, 48, 1.0, 11), "one fixed seed per episode, not the native loop's seed + turn index"
    for q in mock.requests:
        assert "max_tokens" not in q and q["stream"] is False and "n" not in q
    generated = t.messages[2:]
    assert [m.sampling for m in generated if m.role == "assistant"] == [{"temperature": 0.0, "max_tokens": 64, "top_p": 1.0}] * 3
    user_sampling = {"temperature": 0.7, "max_tokens": 48, "top_p": 1.0, "seed": 11}
    assert [m.sampling for m in generated if m.role == "user"] == [user_sampling] * 2
    assert all(m.finish_reason == "stop" and m.usage.latency_s > 0 for m in generated)


async def test_after_assistant_ends_the_graph_with_its_reason(mock):
    seen: list[tuple[Message, int]] = []

    def done_on_second(reply: Message, t: Transcript):
        seen.append((reply, len(t.messages)))
        return TerminationReason.ASSISTANT_DONE if len(seen) == 2 else None

    reason, t = await run(mock, Limits(max_user_turns=5), after_assistant=done_on_second)
    assert reason is TerminationReason.ASSISTANT_DONE
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert len(mock.requests) == 3, "no user request after the assistant's final output"
    assert [(reply.content, n) for reply, n in seen] == [(mock.replies[0], 3), (mock.replies[2], 5)]
    assert seen[-1][0] is t.messages[-1]


async def test_the_token_budget_wins_over_after_assistant(mock):
    reason, _ = await run(mock, Limits(max_user_turns=5, token_budget=8), after_assistant=assistant_done)
    assert reason is TerminationReason.TOKEN_BUDGET and len(mock.requests) == 1


async def test_after_assistant_wins_over_the_turn_limit(mock):
    reason, _ = await run(mock, Limits(max_user_turns=1), after_assistant=assistant_done)
    assert reason is TerminationReason.ASSISTANT_DONE


async def test_a_turn_that_is_only_the_end_marker_is_not_stored(mock, monkeypatch):
    real = mock_openai.reply_text

    def user_says_only_the_marker(messages, words, serial):
        return "[[END]]" if messages[0]["content"] == PERSONA else real(messages, words, serial)

    monkeypatch.setattr(mock_openai, "reply_text", user_says_only_the_marker)
    reason, t = await run(mock, Limits(max_user_turns=5, end_marker="[[END]]"))
    assert reason is TerminationReason.USER_STOP
    assert [m.role for m in t.messages] == ["system", "user", "assistant"] and len(mock.requests) == 2


async def test_the_assistants_marker_is_stripped_from_the_transcript_but_stays_in_the_users_view(mock, monkeypatch):
    real = mock_openai.reply_text

    def assistant_writes_the_marker(messages, words, serial):
        text = real(messages, words, serial)
        return text if messages[0]["content"] == PERSONA else f"{text} [[END]]"

    monkeypatch.setattr(mock_openai, "reply_text", assistant_writes_the_marker)
    reason, t = await run(mock, Limits(max_user_turns=2, end_marker="[[END]]"))
    assert reason is TerminationReason.MAX_TURNS, "only the simulated user's marker stops the conversation"
    assert [m.content for m in t.messages if m.role == "assistant"] == [r.removesuffix(" [[END]]") for r in mock.replies[0::2]]
    assert mock.requests[1]["messages"][-1] == {"role": "user", "content": mock.replies[0]}


async def test_the_last_user_turn_can_end_the_conversation_unanswered(mock):
    reason, t = await run(mock, Limits(max_user_turns=2, reply_to_last_user_turn=False))
    assert reason is TerminationReason.MAX_TURNS
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"] and len(mock.requests) == 2


async def test_long_conversations_fit_the_recursion_limit(mock):
    reason, t = await run(mock, Limits(max_user_turns=15))
    assert reason is TerminationReason.MAX_TURNS
    assert sum(m.role == "user" for m in t.messages) == 15 and len(mock.requests) == 29


async def test_an_opening_of_several_turns_is_the_graphs_starting_state(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    for role, text in (("assistant", "It is 5."), ("user", "And 2 + 4?")):
        t.append(Message(role, text, "dataset", t.next_turn))
    await framework("langgraph").converse(t, assistant, user, Limits(max_user_turns=3))
    assert roles_and_contents(mock.requests[0])[1:] == [("user", QUESTION), ("assistant", "It is 5."), ("user", "And 2 + 4?")]
    swapped = [("assistant", QUESTION), ("user", "It is 5."), ("assistant", "And 2 + 4?")]
    assert roles_and_contents(mock.requests[1])[1:4] == swapped
    assert len(mock.requests) == 1 + 2, "the opening's two user turns count toward the limit"


async def test_a_server_failure_mid_conversation_is_a_backend_error_with_the_turns_so_far(mock, monkeypatch):
    real = mock_openai.reply_text

    def fail_third(messages, words, serial):
        if serial == 3:
            raise RuntimeError("boom")
        return real(messages, words, serial)

    monkeypatch.setattr(mock_openai, "reply_text", fail_third)
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    with pytest.raises(BackendError, match=r"^langgraph: OpenAIAPIError: Error code: 500") as failed:
        await framework("langgraph").converse(t, assistant, user, Limits(max_user_turns=5))
    assert failed.value.__cause__ is not None and len(mock.requests) == 3
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"]
    assert [m.content for m in t.messages[2:]] == mock.replies


async def test_what_the_graph_cannot_start_from_is_refused_as_a_backend_error(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    t.append(Message("assistant", "It is 5.", "dataset", t.next_turn))
    with pytest.raises(BackendError, match="must end with one"):
        await framework("langgraph").converse(t, assistant, user, Limits(max_user_turns=3))
    user.mode = "raw"
    with pytest.raises(BackendError, match="instructed"):
        await framework("langgraph").converse(opening(QUESTION), assistant, user, Limits(max_user_turns=3))
    assert mock.requests == []


def test_the_framework_is_found_by_name():
    lg = framework("langgraph")
    assert lg.name == "langgraph" and type(lg).__module__ == "testbed.frameworks.langgraph_tools"
