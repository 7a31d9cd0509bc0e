"""`Limits.first_stop` is the one stop order: each reason and each tie on its own, and every framework
(native, AutoGen, LangGraph, CAMEL) deciding its stops with it, on a real HTTP server."""

from __future__ import annotations

import ast
import importlib.util

import pytest
from conftest import ALL_FRAMEWORKS, PERSONA, make_pair, opening

from testbed.frameworks import framework
from testbed.loop.orchestrator import Limits, TerminationReason
from testbed.transcript import Message, Transcript, Usage

R = TerminationReason
STEPWISE = ("native", "langgraph", "camel")
"""Frameworks that ask the check after every stored turn; AutoGen asks once, after AgentChat's conditions stopped the team."""
MODULES = {"native": "testbed.frameworks.native", "autogen": "testbed.frameworks.autogen_chat",
           "langgraph": "testbed.frameworks.langgraph_graph", "camel": "testbed.frameworks.camel_roleplay"}
UNANSWERED = Limits(2, token_budget=16, reply_to_last_user_turn=False)
"""Two user turns, the last one without a reply, and a budget the second user turn reaches."""


def said(*turns: tuple[str, int]) -> Transcript:
    """A transcript of the dataset's question then `turns` as (role, completion tokens)."""
    t = Transcript()
    t.append(Message("user", "question", "dataset", 0))
    for role, tokens in turns:
        t.append(Message(role, f"{role} text", role, t.next_turn, usage=Usage(5, tokens)))
    return t


def asked(reason: TerminationReason | None, calls: list[int]):
    def final_output() -> TerminationReason | None:
        calls.append(1)
        return reason
    return final_output


def test_nothing_applies_while_the_limits_are_not_reached():
    assert Limits(3, token_budget=100, end_marker="[[END]]").first_stop(said(("assistant", 8))) is None
    assert Limits(3).first_stop(said(("assistant", 8), ("user", 8))) is None


def test_each_reason_on_its_own():
    assistant_turn = said(("assistant", 8))
    assert Limits(5).first_stop(assistant_turn, user_stopped=True) is R.USER_STOP
    assert Limits(5, token_budget=8).first_stop(assistant_turn) is R.TOKEN_BUDGET
    assert Limits(5).first_stop(assistant_turn, final_output=lambda: R.ASSISTANT_DONE) is R.ASSISTANT_DONE
    assert Limits(1).first_stop(assistant_turn) is R.MAX_TURNS
    assert Limits(5).first_stop(assistant_turn, assistant_done=True) is R.ASSISTANT_DONE


def test_the_turn_limit_waits_for_the_reply_unless_the_last_user_turn_gets_none():
    user_turn = said(("assistant", 8), ("user", 8))
    assert Limits(2).first_stop(user_turn) is None
    assert Limits(2, reply_to_last_user_turn=False).first_stop(user_turn) is R.MAX_TURNS
    assert Limits(2).first_stop(said(("assistant", 8), ("user", 8), ("assistant", 8))) is R.MAX_TURNS


def test_the_budget_counts_completion_tokens_of_this_episode_only():
    t = said(("assistant", 8))
    t.append(Message("user", "shared", "user", t.next_turn, usage=Usage(5, 50), reused_from="probe"))
    assert Limits(5, token_budget=9).first_stop(t) is None
    assert Limits(5, token_budget=None).first_stop(said(("assistant", 10**9))) is None


@pytest.mark.parametrize(("limits", "turns", "kwargs", "first"), [
    (Limits(1, token_budget=8), [("assistant", 8)], {"user_stopped": True}, R.USER_STOP),
    (UNANSWERED, [("assistant", 8), ("user", 8)], {"user_stopped": True}, R.USER_STOP),
    (Limits(1, token_budget=8), [("assistant", 8)], {"final_output": lambda: R.ASSISTANT_DONE}, R.TOKEN_BUDGET),
    (Limits(1, token_budget=8), [("assistant", 8)], {}, R.TOKEN_BUDGET),
    (UNANSWERED, [("assistant", 8), ("user", 8)], {}, R.TOKEN_BUDGET),
    (Limits(1), [("assistant", 8)], {"final_output": lambda: R.ASSISTANT_DONE, "assistant_done": True}, R.ASSISTANT_DONE),
    (Limits(1), [("assistant", 8)], {"final_output": lambda: R.ERROR}, R.ERROR),
    (Limits(1), [("assistant", 8)], {"assistant_done": True}, R.MAX_TURNS),
    (Limits(1, token_budget=8), [("assistant", 8)], {"assistant_done": True}, R.TOKEN_BUDGET),
], ids=["stop>budget+turns", "stop>budget+unanswered-turns", "budget>final+turns", "budget>turns",
        "budget>unanswered-turns", "final>turns+done", "final-any-reason>turns", "turns>done", "budget>done"])
def test_ties_go_to_the_first_in_the_order(limits, turns, kwargs, first):
    assert limits.first_stop(said(*turns), **kwargs) is first


def test_the_final_output_is_not_asked_once_an_earlier_stop_applies():
    calls: list[int] = []
    budget = Limits(5, token_budget=8).first_stop(said(("assistant", 8)), final_output=asked(R.ASSISTANT_DONE, calls))
    assert budget is R.TOKEN_BUDGET
    assert Limits(5).first_stop(said(("assistant", 8)), user_stopped=True, final_output=asked(None, calls)) is R.USER_STOP
    assert calls == []
    assert Limits(5).first_stop(said(("assistant", 8)), final_output=asked(None, calls)) is None and calls == [1]


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
def test_no_framework_names_a_reason_of_its_own(name):
    """Every reason a framework returns comes from the check: its module calls `first_stop` and names no reason."""
    tree = ast.parse(open(importlib.util.find_spec(MODULES[name]).origin).read())
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "first_stop" in attributes
    assert not {r.name for r in R} & (attributes | names)


def spy_on_first_stop(monkeypatch, forced: TerminationReason | None = None) -> list[tuple[int, str, R | None]]:
    """Record every call of the check (messages so far, last role, its answer); answer `forced` instead when given."""
    real, calls = Limits.first_stop, []

    def spy(self, transcript, **kwargs):
        answer = forced or real(self, transcript, **kwargs)
        calls.append((len(transcript.messages), transcript.messages[-1].role, answer))
        return answer

    monkeypatch.setattr(Limits, "first_stop", spy)
    return calls


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_every_framework_returns_what_the_check_decided(mock, monkeypatch, name):
    calls = spy_on_first_stop(monkeypatch)
    assistant, user = make_pair(mock.base_url)
    t = opening()
    reason = await framework(name).converse(t, assistant, user, Limits(max_user_turns=3))
    assert reason is R.MAX_TURNS and len(t.messages) == 7
    if name in STEPWISE:
        assert calls == [(3, "assistant", None), (4, "user", None), (5, "assistant", None), (6, "user", None),
                         (7, "assistant", R.MAX_TURNS)]
    else:
        assert calls == [(7, "assistant", R.MAX_TURNS)]


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_every_framework_obeys_the_check(mock, monkeypatch, name):
    """A check that answers ERROR, a reason no framework decides itself, is what every framework returns;
    the stepwise ones stop at once, after the first reply (AutoGen's team stops on AgentChat's own conditions)."""
    calls = spy_on_first_stop(monkeypatch, forced=R.ERROR)
    assistant, user = make_pair(mock.base_url)
    t = opening()
    reason = await framework(name).converse(t, assistant, user, Limits(max_user_turns=3), lambda m, _: None)
    assert reason is R.ERROR and calls
    if name in STEPWISE:
        assert [m.role for m in t.messages] == ["system", "user", "assistant"] and len(calls) == 1


def done(message: Message, transcript: Transcript) -> TerminationReason:
    return R.ASSISTANT_DONE


@pytest.mark.parametrize(("persona", "limits", "after_assistant", "first", "messages"), [
    (PERSONA + " SAY_MARKER_AT:4:[[END]]", Limits(8, token_budget=30, end_marker="[[END]]"), None, R.USER_STOP, 6),
    (PERSONA, Limits(5, token_budget=8), done, R.TOKEN_BUDGET, 3),
    (PERSONA, Limits(2, token_budget=24), None, R.TOKEN_BUDGET, 5),
    (PERSONA, Limits(2, token_budget=16, reply_to_last_user_turn=False), None, R.TOKEN_BUDGET, 4),
    (PERSONA, Limits(1), done, R.ASSISTANT_DONE, 3),
    (PERSONA, Limits(2, reply_to_last_user_turn=False), None, R.MAX_TURNS, 4),
], ids=["stop>budget", "budget>final", "budget>turns", "budget>unanswered-turns", "final>turns", "unanswered-turns"])
@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_every_framework_breaks_a_tie_the_same_way(mock, name, persona, limits, after_assistant, first, messages):
    assistant, user = make_pair(mock.base_url, persona=persona)
    t = opening()
    reason = await framework(name).converse(t, assistant, user, limits, after_assistant)
    assert reason is first and len(t.messages) == messages
