"""The tolerant parser's reading of a model's text: hermes tags, else fenced or bare JSON calls; all else stays text.

Replies are synthetic, written the ways small models write calls (the issue measured Qwen2.5-Coder fencing them);
hostile ones (huge, deep, a million openings) are read in well under a second and never raise.
"""

from __future__ import annotations

import json
import time

import pytest

from testbed.backends.tool_call_text import TextToolCall, read_tool_calls
from testbed.limits import MAX_JSON_DEPTH, MAX_LABEL_CHARS, MAX_REPLY_BYTES, MAX_TOOL_ARGUMENT_BYTES

CALL = '{"name": "get_user", "arguments": {"user_id": "u1"}}'
GET_USER = TextToolCall("get_user", '{"user_id": "u1"}')


def test_hermes_tags_are_read_first_with_the_text_around_them_as_content():
    read = read_tool_calls(f'I will look.\n<tool_call>\n{CALL}\n</tool_call>\n<tool_call>{{"name": "x", "arguments": {{}}}}</tool_call>')
    assert read.calls == (GET_USER, TextToolCall("x", "{}"))
    assert read.content == "I will look."


def test_a_tag_left_open_runs_to_the_end_and_a_fence_inside_a_tag_is_allowed():
    assert read_tool_calls(f"<tool_call>\n{CALL}").calls == (GET_USER,)
    assert read_tool_calls(f"<tool_call>\n```json\n{CALL}\n```\n</tool_call>").calls == (GET_USER,)


@pytest.mark.parametrize("reply", [
    f"```json\n{CALL}\n```",
    f"```\n{CALL}\n```",
    f"```JSON\n{CALL}```",
    CALL,
    f"  {CALL}\n",
])
def test_a_fenced_or_bare_call_is_a_call_and_its_fence_goes_with_it(reply):
    read = read_tool_calls(reply)
    assert read.calls == (GET_USER,)
    assert read.content is None


def test_prose_around_a_fenced_call_is_the_content_tau2_reads():
    read = read_tool_calls(f"Let me find your account.\n```json\n{CALL}\n```\nOne moment.")
    assert read.calls == (GET_USER,)
    assert read.content == "Let me find your account.\nOne moment."


def test_an_array_of_calls_several_objects_and_parameters_for_arguments():
    array = '[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": {"y": [2]}}]'
    assert read_tool_calls(array).calls == (TextToolCall("a", '{"x": 1}'), TextToolCall("b", '{"y": [2]}'))
    two = f'{CALL}\nthen\n{{"name": "c", "arguments": {{}}}}'
    read = read_tool_calls(two)
    assert read.calls == (GET_USER, TextToolCall("c", "{}")) and read.content == "then"


def test_arguments_written_as_json_text_are_kept_as_written_and_non_ascii_survives():
    assert read_tool_calls('{"name": "f", "arguments": "{\\"city\\": \\"Zürich\\"}"}').calls == (TextToolCall("f", '{"city": "Zürich"}'),)
    assert read_tool_calls('{"name": "f", "arguments": {"city": "Zürich"}}').calls == (TextToolCall("f", '{"city": "Zürich"}'),)
    assert read_tool_calls('{"name": "f", "arguments": ""}').calls == (TextToolCall("f", "{}"),)


@pytest.mark.parametrize("reply", [
    '{"answer": 42}',
    '{"name": "Alice", "age": 30}',
    '[{"name": "f", "arguments": {}}, {"note": "not a call"}]',
    '{"name": "f", "arguments": [1, 2]}',
    '{"name": "f", "arguments": "not json"}',
    '{"name": "", "arguments": {}}',
    '{"name": 7, "arguments": {}}',
    '{"name": "f", "arguments": {"a": 1}',
    '```json\n{"name": "f", "arguments": {"a": }\n```',
    "[]",
    "no json at all",
    "",
    '<tool_call>not json</tool_call>',
])
def test_other_json_broken_json_and_plain_text_stay_text_unchanged(reply):
    read = read_tool_calls(reply)
    assert read.calls == ()
    assert read.content == reply


def test_a_broken_call_does_not_hide_a_good_one_after_it():
    read = read_tool_calls('{"name": "f", "arguments": {"a": 1}\n' + CALL)
    assert read.calls == (GET_USER,)
    assert read.content == '{"name": "f", "arguments": {"a": 1}'


def test_what_is_not_text_is_returned_as_it_came():
    assert read_tool_calls(None).calls == ()  # type: ignore[arg-type]


def test_arguments_past_the_bounds_leave_the_call_as_text():
    deep = '{"name": "f", "arguments": {"a": ' + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "}}"
    assert read_tool_calls(deep).calls == ()
    at_bound = '{"name": "f", "arguments": {"a": ' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}}"
    assert len(read_tool_calls(at_bound).calls) == 1, "the bound itself is allowed"
    long = json.dumps({"name": "f", "arguments": {"a": "x" * MAX_TOOL_ARGUMENT_BYTES}})
    assert read_tool_calls(long).calls == ()
    named = json.dumps({"name": "n" * (MAX_LABEL_CHARS + 1), "arguments": {}})
    assert read_tool_calls(named).calls == ()


@pytest.mark.parametrize("reply", [
    '{"name": "f", "arguments": ' + "[" * 200_000 + "]" * 200_000 + "}",
    '{"' * 2_000_000,
    ('{"a' + "b" * 100_000) * 60,
    "<tool_call>" * 200_000,
    "```" * 500_000 + CALL,
    "[" * 1_000_000 + CALL,
])
def test_hostile_replies_are_read_quickly_and_never_raise(reply):
    started = time.perf_counter()
    read = read_tool_calls(reply)
    assert time.perf_counter() - started < 2.0
    assert isinstance(read.calls, tuple)


def test_a_reply_longer_than_the_reply_bound_is_not_scanned():
    huge = CALL + " " * MAX_REPLY_BYTES
    read = read_tool_calls(huge)
    assert read.calls == () and read.content is huge
