"""Every framework, on a real HTTP server: the same transcript shape (true roles, turn indices, usage),
the scenario's stops as typed reasons, failures as BackendErrors, and every request on the wire log."""

from __future__ import annotations

import pytest
from conftest import ALL_FRAMEWORKS, PERSONA, make_pair, opening

from testbed.backends.base import BackendError
from testbed.frameworks import framework
from testbed.loop.orchestrator import Limits, TerminationReason
from testbed.wire import WireRecorder
from testbed.wire.attribution import attribute
from testbed.wire.routing import routed


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_a_conversation_alternates_true_roles_until_the_turn_limit(mock, name):
    assistant, user = make_pair(mock.base_url)
    t = opening()
    reason = await framework(name).converse(t, assistant, user, Limits(max_user_turns=3))
    assert reason is TerminationReason.MAX_TURNS
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert [m.turn_index for m in t.messages] == list(range(7))
    generated = t.messages[2:]
    assert [m.speaker for m in generated] == ["helper", "simuser"] * 2 + ["helper"]
    assert [m.content for m in generated] == mock.replies, "every generated turn is the server's reply, in order, none lost or repeated"
    assert all(m.usage.completion_tokens == 8 and m.usage.prompt_tokens > 0 for m in generated)
    assert all(m.sampling is not None for m in generated) and t.messages[1].sampling is None


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_the_end_marker_stops_the_conversation_and_is_stripped(mock, name):
    assistant, user = make_pair(mock.base_url, persona=PERSONA + " SAY_MARKER_AT:4:[[END]]")
    t = opening()
    reason = await framework(name).converse(t, assistant, user, Limits(max_user_turns=8, end_marker="[[END]]"))
    assert reason is TerminationReason.USER_STOP
    last = t.messages[-1]
    assert last.role == "user" and "[[END]]" not in last.content and last.content.startswith("reply")
    assert sum(m.role == "user" for m in t.messages) < 8


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_the_token_budget_stops_the_conversation(mock, name):
    assistant, user = make_pair(mock.base_url)
    t = opening()
    reason = await framework(name).converse(t, assistant, user, Limits(max_user_turns=10, token_budget=20))
    assert reason is TerminationReason.TOKEN_BUDGET
    assert 20 <= t.usage().completion_tokens < 28


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_every_request_is_on_the_wire_log_against_the_turn_it_produced(mock, name):
    async with WireRecorder() as recorder:
        tap = recorder.open_tap()
        assistant, user = make_pair(mock.base_url)
        assistant, user = routed(assistant, tap, "assistant"), routed(user, tap, "user")
        t = opening()
        await framework(name).converse(t, assistant, user, Limits(max_user_turns=3))
        wire = attribute(tap.take(), t)
    assert len(wire) == len(mock.requests) == 5
    assert [w.request for w in wire] == mock.requests
    by_turn = {w.turn_index: w for w in wire}
    for m in t.messages[2:]:
        assert by_turn[m.turn_index].role == m.role and by_turn[m.turn_index].reply == m.content
        assert by_turn[m.turn_index].completion_tokens == m.usage.completion_tokens
    assert all(w.status == 200 and w.latency_s > 0 for w in wire)


@pytest.mark.parametrize("name", ALL_FRAMEWORKS)
async def test_a_dead_server_is_a_backend_error_with_the_transcript_so_far(name):
    assistant, user = make_pair("http://127.0.0.1:9/v1")
    t = opening()
    with pytest.raises(BackendError) as failed:
        await framework(name).converse(t, assistant, user, Limits(max_user_turns=3))
    assert failed.value.reason
    assert [m.role for m in t.messages] == ["system", "user"]
