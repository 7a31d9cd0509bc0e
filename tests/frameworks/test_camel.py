"""CAMEL role-playing on the mock server: how its memories present the conversation to each agent, its
documented CAMEL_TASK_DONE stop, the sampling it sends, and the failures it reports instead of raising."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ASSISTANT_PROMPT, PERSONA, make_pair, opening
from helpers import REPO

from testbed.backends.base import BackendError
from testbed.frameworks import framework
from testbed.frameworks.pair import pair_of
from testbed.loop.orchestrator import Limits, TerminationReason
from testbed.transcript import Message

QUESTION = "What is 2 + 3?"


def chat(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in pairs]


async def test_the_ai_user_sees_its_own_turns_as_assistant_and_the_assistants_replies_as_user(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    await framework("camel").converse(t, assistant, user, Limits(max_user_turns=3))
    a1, u1, a2 = (m.content for m in t.messages[2:5])
    assert mock.requests[1]["messages"] == chat(("system", PERSONA), ("assistant", QUESTION), ("user", a1))
    assert mock.requests[3]["messages"] == chat(("system", PERSONA), ("assistant", QUESTION), ("user", a1), ("assistant", u1),
                                                ("user", a2))


async def test_the_assistant_sees_its_system_prompt_and_true_roles(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    await framework("camel").converse(t, assistant, user, Limits(max_user_turns=3))
    a1, u1, a2, u2 = (m.content for m in t.messages[2:6])
    assert mock.requests[0]["messages"] == chat(("system", ASSISTANT_PROMPT), ("user", QUESTION))
    assert mock.requests[4]["messages"] == chat(("system", ASSISTANT_PROMPT), ("user", QUESTION), ("assistant", a1), ("user", u1),
                                                ("assistant", a2), ("user", u2))


async def test_an_assistant_without_a_system_prompt_sends_none(mock):
    assistant, user = make_pair(mock.base_url, assistant_prompt=None)
    t = opening(QUESTION, system=None)
    reason = await framework("camel").converse(t, assistant, user, Limits(max_user_turns=2))
    assert reason is TerminationReason.MAX_TURNS
    assert mock.requests[0]["messages"] == chat(("user", QUESTION))
    assert mock.requests[2]["messages"][0] == {"role": "user", "content": QUESTION}
    assert mock.requests[1]["messages"][0] == {"role": "system", "content": PERSONA}


async def test_a_scripted_opening_is_in_both_memories_from_each_side(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening("Hi.")
    t.append(Message("assistant", "Hello, how can I help?", "dataset", t.next_turn))
    t.append(Message("user", QUESTION, "dataset", t.next_turn))
    await framework("camel").converse(t, assistant, user, Limits(max_user_turns=3))
    a1 = t.messages[4].content
    assert mock.requests[0]["messages"] == chat(("system", ASSISTANT_PROMPT), ("user", "Hi."),
                                                ("assistant", "Hello, how can I help?"), ("user", QUESTION))
    assert mock.requests[1]["messages"] == chat(("system", PERSONA), ("assistant", "Hi."), ("user", "Hello, how can I help?"),
                                                ("assistant", QUESTION), ("user", a1))


async def test_camel_task_done_from_the_user_is_a_user_stop_and_is_stripped(mock):
    assistant, user = make_pair(mock.base_url, persona=PERSONA + " SAY_MARKER_AT:4:CAMEL_TASK_DONE")
    t = opening(QUESTION)
    reason = await framework("camel").converse(t, assistant, user, Limits(max_user_turns=8, end_marker="[[END]]"))
    assert reason is TerminationReason.USER_STOP
    assert mock.replies[-1].endswith(" CAMEL_TASK_DONE")
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert t.messages[-1].content == mock.replies[-1].removesuffix(" CAMEL_TASK_DONE")
    assert len(mock.requests) == 4, "the assistant is not asked to answer the user's closing turn"


async def test_the_last_allowed_user_turn_can_end_the_episode_before_the_assistant_replies(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    reason = await framework("camel").converse(t, assistant, user, Limits(max_user_turns=2, reply_to_last_user_turn=False))
    assert reason is TerminationReason.MAX_TURNS
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"] and len(mock.requests) == 2


async def test_after_assistant_ends_the_episode(mock):
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    seen = []
    reason = await framework("camel").converse(t, assistant, user, Limits(max_user_turns=5),
                                               after_assistant=lambda m, tr: seen.append(m) or TerminationReason.ASSISTANT_DONE)
    assert reason is TerminationReason.ASSISTANT_DONE and seen == [t.messages[-1]] and len(mock.requests) == 1


async def test_each_side_sends_its_own_sampling_and_nothing_more(mock):
    assistant, user = make_pair(mock.base_url, temperature=0.9, seed=23)
    pair = pair_of(assistant, user)
    t = opening(QUESTION)
    await framework("camel").converse(t, assistant, user, Limits(max_user_turns=2))
    a, u = pair.assistant.sampling, pair.user.sampling
    assert (u.temperature, u.max_tokens, u.top_p, u.seed) == (0.9, 48, 1.0, 23) and a.seed is None
    sent_a, sent_u, sent_a2 = mock.requests
    assert {k: v for k, v in sent_a.items() if k != "messages"} == {"model": "mock", "temperature": a.temperature,
                                                                    "max_tokens": a.max_tokens, "top_p": a.top_p}
    assert sent_a2.keys() == sent_a.keys() and sent_a2["temperature"] == a.temperature
    assert {k: v for k, v in sent_u.items() if k != "messages"} == {"model": "mock", "temperature": 0.9, "max_tokens": 48,
                                                                    "top_p": 1.0, "seed": 23}
    assert t.messages[3].sampling == {"temperature": 0.9, "max_tokens": 48, "top_p": 1.0, "seed": 23}
    assert t.messages[2].sampling == {"temperature": a.temperature, "max_tokens": a.max_tokens, "top_p": a.top_p}


async def test_a_terminated_response_without_a_message_is_a_backend_error(mock, monkeypatch):
    from camel.agents import ChatAgent
    from camel.responses import ChatAgentResponse

    async def context_too_long(self, message, response_format=None):
        return ChatAgentResponse(msgs=[], terminated=True, info={"termination_reasons": ["max_tokens_exceeded"]})

    monkeypatch.setattr(ChatAgent, "astep", context_too_long)
    assistant, user = make_pair(mock.base_url)
    t = opening(QUESTION)
    with pytest.raises(BackendError, match="max_tokens_exceeded"):
        await framework("camel").converse(t, assistant, user, Limits(max_user_turns=3))
    assert [m.role for m in t.messages] == ["system", "user"]


async def test_a_failure_mid_conversation_keeps_the_turns_so_far(mock):
    assistant, _ = make_pair(mock.base_url)
    _, user = make_pair("http://127.0.0.1:9/v1")
    t = opening(QUESTION)
    with pytest.raises(BackendError, match="^camel: "):
        await framework("camel").converse(t, assistant, user, Limits(max_user_turns=3))
    assert [m.role for m in t.messages] == ["system", "user", "assistant"] and t.messages[2].content == mock.replies[0]


def test_the_adapter_leaves_logging_alone():
    code = "import logging; import testbed.frameworks.camel_roleplay; print(len(logging.getLogger().handlers))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO, check=True)
    assert out.stdout.split() == ["0"], "importing CAMEL must not configure the root logger"
    assert out.stderr == ""
