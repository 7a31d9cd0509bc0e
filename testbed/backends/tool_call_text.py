"""Tool calls read from a model's text, as small open models write them: the tolerant parser's pure part.

vLLM's `hermes` parser reads a call only inside `<tool_call>…</tool_call>` tags. Small models (Qwen2.5-Coder,
SmolLM2) often write the same JSON without the tags: fenced (```` ```json {"name": …, "arguments": …} ``` ````) or
bare, alone or as an array, sometimes with `parameters` for `arguments`. The issue that added this measured 0 of 5
such replies parsed by `hermes`, and 40 of 55 read by this rule. The rule, in order:

1. hermes tags: every tagged body (fences inside are allowed) must be a call or an array of calls;
2. otherwise every fenced or bare JSON object or array whose items all have a `name` and an `arguments` (or
   `parameters`) object; any other JSON (an answer, an example without `arguments`) stays text.

The text outside the calls is the reply's content (τ²'s communicate check reads it). Garbage never raises: a
reply longer than MAX_REPLY_BYTES characters, JSON nested too deep to decode, a call whose arguments pass
MAX_TOOL_ARGUMENT_BYTES or MAX_JSON_DEPTH, or a name longer than MAX_LABEL_CHARS leaves that text as text.
Stdlib only (plus testbed's bounds), because it also runs inside the vLLM server (vllm_tool_parser_plugin).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from testbed.limits import MAX_LABEL_CHARS, MAX_REPLY_BYTES
from testbed.tool_arguments import arguments_problem

TOLERANT_PARSER = "tolerant"
"""The name the plugin registers with vLLM (`--tool-call-parser tolerant`) and an agent spec writes as
`server.tool_call_parser: tolerant`."""

MAX_JSON_STARTS = 32
"""JSON openings tried per reply: each costs at most one linear scan, so a reply of a million `{"` costs 32 scans."""

_TAG_OPEN, _TAG_CLOSE = "<tool_call>", "</tool_call>"
_FENCE = "```"
_JSON_START = re.compile(r'\{\s*"|\[\s*\{\s*"')
"""Where a call object, or an array of them, can start: a brace (after a bracket) followed by a key."""
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class TextToolCall:
    """One call read from text: the tool's name and its arguments as JSON object text (as the OpenAI API sends them)."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ReadReply:
    """A reply split into the calls it makes and its content: the text outside them (None when nothing is left)."""

    calls: tuple[TextToolCall, ...]
    content: str | None


def read_tool_calls(text: str) -> ReadReply:
    """The calls in a model's reply and the text beside them; no calls and the text unchanged when it makes none.

    Never raises: whatever cannot be read as calls within the bounds of testbed.limits stays text."""
    if not isinstance(text, str) or len(text) > MAX_REPLY_BYTES or "{" not in text:
        return ReadReply((), text)
    if _TAG_OPEN in text:
        tagged = _tagged(text)
        if tagged is not None:
            return tagged
    return _untagged(text)


def _tagged(text: str) -> ReadReply | None:
    """hermes' rule: every `<tool_call>` body (closed, or running to the end) holds calls; None when one does not."""
    calls: list[TextToolCall] = []
    outside: list[str] = []
    position = 0
    while (start := text.find(_TAG_OPEN, position)) != -1:
        outside.append(text[position:start])
        body_start = start + len(_TAG_OPEN)
        end = text.find(_TAG_CLOSE, body_start)
        body, position = (text[body_start:], len(text)) if end == -1 else (text[body_start:end], end + len(_TAG_CLOSE))
        found = _whole_json_calls(_unfenced(body.strip()))
        if found is None:
            return None
        calls += found
    outside.append(text[position:])
    return ReadReply(tuple(calls), _joined(outside))


def _untagged(text: str) -> ReadReply:
    """Fenced or bare JSON calls anywhere in the text, each removed with its fence; other JSON is skipped whole."""
    calls: list[TextToolCall] = []
    spans: list[tuple[int, int]] = []
    position = tries = 0
    while tries < MAX_JSON_STARTS and (opening := _JSON_START.search(text, position)) is not None:
        tries += 1
        start = opening.start()
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        position = end
        found = _calls_in(value)
        if found:
            calls += found
            spans.append(_with_fence(text, start, end, spans[-1][1] if spans else 0))
    if not calls:
        return ReadReply((), text)
    outside, previous = [], 0
    for start, end in spans:
        outside.append(text[previous:start])
        previous = end
    outside.append(text[previous:])
    return ReadReply(tuple(calls), _joined(outside))


def _with_fence(text: str, start: int, end: int, floor: int) -> tuple[int, int]:
    """The span of a call widened to the Markdown fence around it (```` ```json ```` … ```` ``` ````), when it has one."""
    before = text[floor:start].rstrip()
    opening = before.rfind(_FENCE)
    if opening == -1 or not _is_fence_label(before[opening + len(_FENCE):]):
        return start, end
    after = text[end:]
    closing = len(after) - len(after.lstrip())
    if not after.startswith(_FENCE, closing):
        return start, end
    return floor + opening, end + closing + len(_FENCE)


def _is_fence_label(label: str) -> bool:
    return label == "" or (len(label) <= 20 and label.replace("-", "").replace("_", "").isalnum())


def _unfenced(body: str) -> str:
    """A tag body without the Markdown fence a model may put inside the tags."""
    if body.startswith(_FENCE) and body.endswith(_FENCE) and len(body) >= 2 * len(_FENCE):
        inner = body[len(_FENCE):-len(_FENCE)]
        first_line, _, rest = inner.partition("\n")
        return (rest if _is_fence_label(first_line.strip()) and rest else inner).strip()
    return body


def _whole_json_calls(body: str) -> list[TextToolCall] | None:
    """The calls when the whole of `body` is one call or an array of calls; None otherwise."""
    try:
        value, end = _DECODER.raw_decode(body)
    except (ValueError, RecursionError):
        return None
    if body[end:].strip():
        return None
    return _calls_in(value)


def _calls_in(value: Any) -> list[TextToolCall] | None:
    """A call object, or a non-empty array of nothing but call objects, as calls; None for any other JSON."""
    items = value if isinstance(value, list) else [value]
    calls = [_call(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return calls  # type: ignore[return-value]


def _call(item: Any) -> TextToolCall | None:
    """One object with a name and an arguments (or parameters) object, within bounds; None otherwise."""
    if not isinstance(item, dict):
        return None
    name = item.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_LABEL_CHARS:
        return None
    key = "arguments" if "arguments" in item else "parameters" if "parameters" in item else None
    if key is None:
        return None
    arguments = _arguments_text(item[key])
    if arguments is None:
        return None
    return TextToolCall(name.strip(), arguments)


def _arguments_text(value: Any) -> str | None:
    """Arguments as JSON object text: an object written out, or text that already holds one; None out of bounds."""
    if isinstance(value, dict):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (ValueError, TypeError, RecursionError):
            return None
    elif isinstance(value, str):
        text = value.strip() or "{}"
        if arguments_problem(text) is not None:
            return None
        try:
            if not isinstance(json.loads(text), dict):
                return None
        except (ValueError, RecursionError):
            return None
    else:
        return None
    return None if arguments_problem(text) is not None else text


def _joined(pieces: list[str]) -> str | None:
    """The text outside the calls: its non-blank pieces, trimmed, one per line; None when all are blank."""
    kept = [piece.strip() for piece in pieces if piece.strip()]
    return "\n".join(kept) or None
