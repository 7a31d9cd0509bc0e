"""The framework seam: the native loop starts from whoever speaks next, stops on typed reasons, and is found by name."""

from __future__ import annotations

import pytest

from testbed.frameworks import framework
from testbed.loop.orchestrator import Limits, TerminationReason
from testbed.transcript import Message, Transcript


class Scripted:
    """A participant that says its lines in order, with its role and the next turn index."""

    def __init__(self, role: str, lines: list[str]):
        self.role, self.lines, self.calls = role, list(lines), 0

    async def respond(self, transcript: Transcript) -> Message:
        self.calls += 1
        return Message(self.role, self.lines.pop(0), self.role, transcript.next_turn)


def opened(*roles: str) -> Transcript:
    t = Transcript()
    for role in roles:
        t.append(Message(role, f"{role} text", "dataset", t.next_turn))
    return t


async def test_the_loop_starts_with_the_assistant_after_a_user_turn():
    t = opened("user")
    assistant, user = Scripted("assistant", ["a1", "a2"]), Scripted("user", ["u1"])
    reason = await framework().converse(t, assistant, user, Limits(max_user_turns=2))
    assert reason is TerminationReason.MAX_TURNS
    assert [m.content for m in t.messages] == ["user text", "a1", "u1", "a2"]


async def test_the_loop_starts_with_the_user_after_an_assistant_turn_and_can_end_on_it():
    t = opened("user", "assistant")
    assistant, user = Scripted("assistant", []), Scripted("user", ["Why?"])
    reason = await framework("native").converse(t, assistant, user, Limits(max_user_turns=2, reply_to_last_user_turn=False))
    assert reason == "max_turns" and assistant.calls == 0
    assert [m.role for m in t.messages] == ["user", "assistant", "user"]


async def test_the_end_marker_is_a_typed_stop_and_never_stored():
    t = opened("user")
    reason = await framework().converse(t, Scripted("assistant", ["a1"]), Scripted("user", ["Thanks [[END]]"]),
                                        Limits(max_user_turns=5, end_marker="[[END]]"))
    assert reason is TerminationReason.USER_STOP
    assert t.messages[-1].content == "Thanks" and "[[END]]" not in " ".join(m.content for m in t.messages)


async def test_after_assistant_can_end_the_episode():
    t = opened("user")
    reason = await framework().converse(t, Scripted("assistant", ["done"]), Scripted("user", []), Limits(max_user_turns=5),
                                        after_assistant=lambda m, _: TerminationReason.ASSISTANT_DONE)
    assert reason is TerminationReason.ASSISTANT_DONE and len(t.messages) == 2


def test_termination_reasons_are_stored_as_their_strings():
    assert [str(r) for r in TerminationReason] == ["user_stop", "max_turns", "token_budget", "assistant_done", "error", "transfer",
                                                  "agent_stop", "max_steps", "too_many_errors"]


def test_an_unknown_framework_names_the_known_ones():
    with pytest.raises(LookupError, match="unknown framework 'crewai': use one of native, autogen, langgraph, camel"):
        framework("crewai")


def test_the_native_framework_satisfies_the_protocol():
    native = framework()
    assert native.name == "native" and callable(getattr(native, "converse"))
