"""Tool calls in an OpenAI reply: read strictly, arguments kept as written, a call the testbed cannot read a fault."""

from __future__ import annotations

import pytest

from testbed.backends.base import GenerateRequest
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.backends.openai_reply import MalformedReply, parse_completion
from testbed.transcript import ToolCall


def reply(message: dict) -> dict:
    return {"choices": [{"message": message, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


def test_a_reply_with_tool_calls_and_null_content_is_read_with_its_raw_arguments():
    body = reply({"content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "get_user", "arguments": '{"user_id": "x"}'}},
        {"type": "function", "function": {"name": "list", "arguments": "{not json"}},
    ]})
    completion = parse_completion(body, 0.1, 1)
    assert completion.text == ""
    assert completion.tool_calls == (ToolCall("call_a", "get_user", '{"user_id": "x"}'), ToolCall("call_1", "list", "{not json"))


def test_a_plain_reply_has_no_tool_calls_and_a_null_content_without_calls_stays_malformed():
    assert parse_completion(reply({"content": "hi", "tool_calls": []}), 0.1, 1).tool_calls == ()
    with pytest.raises(MalformedReply, match="content"):
        parse_completion(reply({"content": None}), 0.1, 1)


@pytest.mark.parametrize("calls, why", [("x", "not a list"), ([{"function": {}}], "no function name"), ([7], "no function name")])
def test_tool_calls_the_testbed_cannot_read_are_malformed_replies(calls, why):
    with pytest.raises(MalformedReply, match=why):
        parse_completion(reply({"content": None, "tool_calls": calls}), 0.1, 1)


def test_a_request_with_tools_sends_them_with_automatic_tool_choice():
    backend = OpenAICompatibleBackend(base_url="http://127.0.0.1:9/v1", model="m")
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    payload = backend._payload(GenerateRequest([{"role": "user", "content": "hi"}], tools=tools))
    assert payload["tools"] == tools and payload["tool_choice"] == "auto"
    assert "tools" not in backend._payload(GenerateRequest([{"role": "user", "content": "hi"}]))
