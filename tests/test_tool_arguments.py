"""Tool-call arguments are measured before they are parsed: nesting is counted by brackets outside strings, with no
recursion and in linear time, so a hostile call is a reason naming the bound, never a RecursionError or a stall."""

from __future__ import annotations

import json
import time

import pytest

from testbed.limits import MAX_JSON_DEPTH, MAX_TOOL_ARGUMENT_BYTES
from testbed.tool_arguments import ArgumentsOutOfBounds, bounded_loads, nesting_depth, parse_arguments
from testbed.transcript import ToolCall

DEEP = '{"a":' + "[" * 1000 + "]" * 1000 + "}"


@pytest.mark.parametrize("text, depth", [
    ("{}", 1),
    ('{"a": [1, {"b": []}]}', 4),
    ('{"a": "[[[[{{{{"}', 1),
    ('{"a": "say \\"[[[[\\" twice", "b": [[]]}', 3),
    ('{"a": "back\\\\", "b": [[[]]]}', 4),
    ("42", 0),
])
def test_nesting_counts_brackets_outside_strings(text, depth):
    assert nesting_depth(text) == depth
    if text != "42":
        assert nesting_depth(text) == _parsed_depth(json.loads(text))


def _parsed_depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_parsed_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_parsed_depth, value), default=0)
    return 0


def test_arguments_nested_past_the_bound_are_a_reason_and_never_parsed():
    assert parse_arguments(DEEP) == (None, f"nest deeper than {MAX_JSON_DEPTH} levels (testbed.limits.MAX_JSON_DEPTH)")
    edge = '{"a":' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}"
    assert parse_arguments(edge)[0] is not None, "exactly the bound is accepted"
    with pytest.raises(ArgumentsOutOfBounds, match="nest deeper than"):
        bounded_loads(DEEP)
    assert ToolCall("c", "f", DEEP).parsed_arguments() is None


def test_arguments_past_the_size_bound_are_a_reason_counted_in_bytes():
    too_long = json.dumps({"a": "é" * (MAX_TOOL_ARGUMENT_BYTES // 2)}, ensure_ascii=False)
    assert len(too_long) < MAX_TOOL_ARGUMENT_BYTES, "under the bound in characters, over it in bytes"
    assert parse_arguments(too_long) == (None, "are 262,153 bytes long, over the 262,144 a call's arguments may be "
                                               "(testbed.limits.MAX_TOOL_ARGUMENT_BYTES)")
    assert parse_arguments(json.dumps({"a": "x" * (MAX_TOOL_ARGUMENT_BYTES // 2)}))[1] is None


@pytest.mark.parametrize("text", ["", "  ", '{"a": 1}'])
def test_ordinary_arguments_parse_as_before(text):
    assert parse_arguments(text) == (json.loads(text) if text.strip() else {}, None)


@pytest.mark.parametrize("text", ["[1, 2]", '"x"', '{"a"', '{"a": "unterminated [[[[', "{'a': 1}"])
def test_what_is_not_a_json_object_says_so(text):
    assert parse_arguments(text) == (None, "are not a JSON object")


@pytest.mark.parametrize("text", [
    '"\\"' * 80_000,
    "[ " * 120_000,
    '{"a": "' + "[" * 250_000 + '"}',
    '"' + "a\\\"" * 60_000,
])
def test_measuring_hostile_text_takes_milliseconds(text):
    started = time.perf_counter()
    parse_arguments(text)
    assert time.perf_counter() - started < 0.5
