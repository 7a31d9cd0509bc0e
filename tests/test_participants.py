"""Transcripts keep true roles; views and perturbations are derived; modes are refused when impossible."""

from __future__ import annotations

import pytest

from testbed.backends.base import BackendError, Capabilities
from testbed.backends.scripted import ScriptedBackend
from testbed.loop.participants import SimulatedUser, TurnSampling, render_conversation
from testbed.scenarios.perturbations import EXPLICIT_QUESTION, perturb
from testbed.specs.agent import AgentSpec
from testbed.specs.loader import ResolvedAgent
from testbed.transcript import Message, Transcript, Usage

AGENT = ResolvedAgent(AgentSpec(name="u", backend="scripted", model="m", outputs=[]), None, None)  # type: ignore[arg-type]


def conversation() -> Transcript:
    t = Transcript()
    t.append(Message("system", "Be brief.", "a", 0))
    t.append(Message("user", "What is 2 + 2?", "dataset", 1))
    t.append(Message("assistant", "2 + 2 = 4.", "a", 2, usage=Usage(10, 5, 0.2)))
    return t


def test_turn_indices_must_follow_in_order():
    t = conversation()
    with pytest.raises(ValueError):
        t.append(Message("user", "again", "u", 7))


def test_usage_skips_reused_messages():
    t = conversation()
    t.append(Message("user", "why?", "u", 3, usage=Usage(20, 2, 0.1), reused_from=None))
    t.messages[2] = Message("assistant", "2 + 2 = 4.", "a", 2, usage=Usage(10, 5, 0.2), reused_from="answer-1")
    assert t.usage() == Usage(20, 2, 0.1)


def test_raw_view_opens_an_empty_user_turn_and_keeps_true_roles():
    user = SimulatedUser(AGENT, ScriptedBackend(), "raw")
    messages, continued = user.view(conversation())
    assert continued and [m["role"] for m in messages] == ["system", "user", "assistant", "user"] and messages[-1]["content"] == ""


def test_instructed_view_renders_the_dialogue_without_the_system_prompt():
    user = SimulatedUser(AGENT, ScriptedBackend(), "instructed", "Talk:\n{conversation}\nYou are the user.")
    messages, continued = user.view(conversation())
    assert not continued and len(messages) == 1
    assert messages[0]["content"] == "Talk:\nUser: What is 2 + 2?\n\nAssistant: 2 + 2 = 4.\nYou are the user."
    assert "Be brief." not in render_conversation(conversation())


def test_modes_refused_when_impossible():
    with pytest.raises(BackendError, match="cannot continue the user turn"):
        SimulatedUser(AGENT, ScriptedBackend(capabilities=Capabilities()), "raw")
    with pytest.raises(BackendError, match="{conversation}"):
        SimulatedUser(AGENT, ScriptedBackend(), "instructed", "no slot here")


async def test_user_turn_is_a_user_message_with_sampling_and_mode():
    backend = ScriptedBackend(["Why is it 4?"])
    turn = await SimulatedUser(AGENT, backend, "raw", sampling=TurnSampling(1.0, 20, seed=7)).respond(conversation())
    assert (turn.role, turn.content, turn.turn_index) == ("user", "Why is it 4?", 3)
    assert turn.sampling == {"temperature": 1.0, "max_tokens": 20, "top_p": 1.0, "seed": 7, "mode": "raw"}
    assert backend.requests[0].continue_final_message


def test_perturbations():
    answer = "First add two and two. Then write the result, which is four."
    cut = perturb(answer, "truncation")
    assert answer.startswith(cut) and len(cut) <= len(answer) // 2 and not cut.endswith(" ")
    assert perturb(answer, "explicit_question").endswith(EXPLICIT_QUESTION)
    assert perturb(answer, "none") == answer
    with pytest.raises(ValueError):
        perturb(answer, "shuffle")
