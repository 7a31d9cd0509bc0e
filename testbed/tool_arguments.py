"""Tool-call arguments read within bounds: too long or too deeply nested is a one-line reason, never a RecursionError.

A model, a python agent or an HTTP agent writes a call's arguments as JSON text; the testbed parses
it where the call runs (τ²'s tool desk), where τ²'s evaluator replays it, and where a view shows it.
Python's `json` recurses once per level of nesting, so arguments nested a thousand deep (2 KB of
`[[[[...]]]]`) raise RecursionError in the parser, and again in anything that walks the parsed value
(`json.dumps`, pydantic, deepdiff). Every reader here checks the text first with a scanner that
counts brackets outside strings and recurses on nothing, so a hostile call costs its tool an error
message (or its episode an error), and the run goes on.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from testbed.limits import MAX_JSON_DEPTH, MAX_TOOL_ARGUMENT_BYTES

_NEXT = re.compile(r'["\[\]{}]')
"""Where a string or a bracket starts: everything between is numbers, words, commas and space."""
_BRACKETS = re.compile(r'[\[\]{}]++')
_STRING_REST = re.compile(r'(?:[^"\\]++|\\.)*+"', re.S)
"""The rest of a string after its opening quote, up to and with its closing quote (linear: no backtracking)."""
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class ArgumentsOutOfBounds(ValueError):
    """Arguments too long or too deeply nested to parse; the message is the one-line reason, naming the bound."""


def nesting_depth(text: str, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in JSON `text`, counting brackets outside strings (no parsing, no
    recursion); it stops counting once the depth passes `stop_above`. For text that is not JSON it is an estimate,
    which is all a bound needs: the parser refuses such text anyway."""
    deepest = depth = 0
    position = 0
    while (found := _NEXT.search(text, position)) is not None:
        if found.group() == '"':
            rest = _STRING_REST.match(text, found.end())
            if rest is None:
                break
            position = rest.end()
            continue
        run = _BRACKETS.match(text, found.start())
        steps = [_STEP[c] for c in run.group()]
        deepest = max(deepest, max(accumulate(steps, initial=depth)))
        depth += sum(steps)
        position = run.end()
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def arguments_problem(text: str) -> str | None:
    """Why `text` may not be parsed as a call's arguments (longer than MAX_TOOL_ARGUMENT_BYTES, nested deeper than
    MAX_JSON_DEPTH), as the end of a sentence ("are 300,000 bytes long, ..."); None when it is within both bounds."""
    if len(text) > MAX_TOOL_ARGUMENT_BYTES // 4:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_TOOL_ARGUMENT_BYTES:
            return (f"are {size:,} bytes long, over the {MAX_TOOL_ARGUMENT_BYTES:,} a call's arguments may be "
                    "(testbed.limits.MAX_TOOL_ARGUMENT_BYTES)")
    if nesting_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return f"nest deeper than {MAX_JSON_DEPTH} levels (testbed.limits.MAX_JSON_DEPTH)"
    return None


def bounded_loads(text: str) -> Any:
    """`json.loads(text)` once `text` is within the arguments' bounds; ArgumentsOutOfBounds (a ValueError) when it is
    not, ValueError when it is not JSON."""
    problem = arguments_problem(text)
    if problem is not None:
        raise ArgumentsOutOfBounds(f"the arguments {problem}")
    return json.loads(text)


def parse_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The arguments as the JSON object they must be (empty text is no arguments) and None; or None and why not, as
    the end of a sentence that starts "the arguments ..." ("are not a JSON object", "nest deeper than 64 levels")."""
    if not text.strip():
        return {}, None
    problem = arguments_problem(text)
    if problem is not None:
        return None, problem
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, "are not a JSON object"
    return (value, None) if isinstance(value, dict) else (None, "are not a JSON object")
