"""The wire recorder with tool traffic: a request with tools and a reply that calls them (`content` null) is a readable
completion, forwarded once and recorded, on a retrying route as on the native loop's pass-through one."""

from __future__ import annotations

import json
import sys

import aiohttp
import pytest

from helpers import REPO, write_yaml

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

from testbed.running.runner import run_scenario  # noqa: E402
from testbed.scenarios.tau2.domains import tau2_installed  # noqa: E402
from testbed.specs.loader import load_scenario  # noqa: E402
from testbed.wire import WireRecorder  # noqa: E402
from testbed.wire.faults import RetryPolicy, unreadable  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def test_a_tool_call_reply_with_null_content_is_readable():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [CALL]},
                         "finish_reason": "tool_calls"}]}
    assert unreadable(json.dumps(body).encode()) is None
    assert unreadable(b'{"choices": []}') == "the reply has no choices", "a reply without a choice is still a fault"


async def test_a_retrying_route_forwards_a_tool_call_reply_once_and_records_it():
    async with MockOpenAI(tool_script=[[{"name": "lookup", "arguments": {"id": "a"}}]]) as mock, WireRecorder() as recorder:
        tap = recorder.open_tap()
        base = tap.route("assistant", mock.base_url, RetryPolicy(retries=3, backoff_base_s=0.01))
        body = {"model": "mock", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "tool_choice": "auto"}
        async with aiohttp.ClientSession(headers=tap.headers) as http:
            async with http.post(f"{base}/chat/completions", json=body) as resp:
                assert resp.status == 200
                reply = await resp.json()
        (record,) = tap.take()
    assert len(mock.requests) == 1, "a tool-call reply is an answer, not an unreadable body to retry"
    assert tap.gave_up is None and record.answered and record.reply is None
    assert record.request["tools"] == TOOLS and record.response == reply
    assert reply["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"id": "a"}'}


@pytest.mark.skipif(not tau2_installed(), reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")
async def test_a_tau2_airline_episodes_wire_log_holds_its_tool_calls_at_their_turns(tmp_path, store):
    from testbed.scenarios.tau2.domains import domain

    d = domain("airline")
    db = d.new_environment().tools.db
    user_id = next(iter(db.users))
    script = [[{"name": "get_user_details", "arguments": {"user_id": user_id}},
               {"name": "get_reservation_details", "arguments": {"reservation_id": "NO-SUCH-RESERVATION"}}]]
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text("SAY_MARKER_AT:3:###STOP###\n{guidelines}\n<scenario>\n{scenario}\n</scenario>\n")
    async with MockOpenAI(tool_script=script) as mock:
        write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "openai", "model": "mock", "base_url": mock.base_url})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "airline", "tasks": {"ids": [next(iter(d.tasks))]}, "assistant": "mock.yaml",
            "user": "mock.yaml", "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32, "max_steps": 30}))
        summary = await run_scenario(scenario, store, show_progress=False, wire=True)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "user_stop"
    messages = store.messages(summary.run_id, episode.episode_id)
    results = [m for m in messages if m.role == "tool"]
    assert [r.tool_result.error for r in results] == [False, True] and json.loads(results[0].content)["user_id"] == user_id
    records = store.wire(summary.run_id, episode.episode_id)
    assert all(r.status == 200 and r.answered for r in records) and len(records) == len(mock.requests) == 4
    (calling,) = [r for r in records if r.response["choices"][0]["message"].get("tool_calls")]
    assert calling.reply is None and calling.request["tools"] == d.tools
    assert calling.turn_index == next(m.turn_index for m in messages if m.tool_calls)
    assert store.rewards(summary.run_id)[episode.episode_id].reward is not None
