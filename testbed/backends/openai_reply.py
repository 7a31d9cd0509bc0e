"""Read an OpenAI chat-completion reply strictly: anything the testbed cannot read is a fault, never a crash.

An empty string is a real generation (the taxonomy calls it `degenerate`); a missing or null
`content`, a non-text `content`, a token count that is not a non-negative integer or a body that
is not JSON are malformed replies, which the backend retries like a transient fault.
"""

from __future__ import annotations

import json
from typing import Any

from testbed.backends.base import Completion
from testbed.redaction import redact, redact_secrets_only
from testbed.transcript import ToolCall, Usage


class MalformedReply(ValueError):
    """A reply the testbed cannot read; the message says what was wrong, without the whole body."""


def _shape(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _text(message: dict[str, Any]) -> str:
    if "content" not in message:
        raise MalformedReply("the reply's message has no `content`")
    content = message["content"]
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise MalformedReply(f"the reply's `content` is {_shape(content)}, not text")


def _count(usage: dict[str, Any], field: str) -> int:
    value = usage.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedReply(f"usage.{field} is {str(value)[:40]!r}, not a non-negative integer")
    return value


def parse_completion(body: Any, latency_s: float, attempts: int) -> Completion:
    """The completion in a decoded JSON body, or MalformedReply saying what is wrong with it."""
    if not isinstance(body, dict):
        raise MalformedReply(f"the reply is a JSON {_shape(body)}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedReply("the reply has no `choices[0]` object")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedReply(f"choices[0].message is {_shape(message)}, not an object")
    calls = _tool_calls(message)
    text = "" if calls and message.get("content") is None else _text(message)
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise MalformedReply(f"finish_reason is {_shape(finish)}, not text")
    usage = body.get("usage") or {}
    if not isinstance(usage, dict):
        raise MalformedReply(f"usage is {_shape(usage)}, not an object")
    return Completion(
        text=redact_secrets_only(text),
        finish_reason=finish,
        usage=Usage(_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"), latency_s),
        attempts=attempts,
        tool_calls=calls,
    )


def _tool_calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    """The message's tool calls; a call the testbed cannot read is a malformed reply. Arguments stay raw text:
    arguments that are not JSON are the model's mistake, answered by the environment as a tool error."""
    raw = message.get("tool_calls")
    if raw is None or raw == []:
        return ()
    if not isinstance(raw, list):
        raise MalformedReply(f"the reply's `tool_calls` is {_shape(raw)}, not a list")
    calls = []
    for i, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise MalformedReply(f"tool_calls[{i}] has no function name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{i}"
        calls.append(ToolCall(call_id, function["name"], redact_secrets_only(arguments)))
    return tuple(calls)


def error_excerpt(raw: bytes, limit: int = 300) -> str:
    """The start of an error body as safe text: decoded leniently, keys redacted, cut to `limit`."""
    text = raw[: limit * 4].decode("utf-8", errors="replace")
    text = " ".join(redact(text).split())
    return text[:limit] + ("…" if len(text) > limit else "")


REFUSED_TYPE = "testbed_refused"
"""The error type of the wire recorder's answer for a reply it refused (too long, redirected off the origin)."""


def refused_body(reason: str) -> bytes:
    """The wire recorder's answer for a refused reply: an OpenAI-style error body, marked so the testbed's own
    backend behind the recorder takes `reason` as its error at once instead of retrying a 502."""
    return json.dumps({"error": {"message": reason, "type": REFUSED_TYPE}}).encode()


def wire_refusal(raw: bytes) -> str | None:
    """The reason in a body made by refused_body; None for any other body."""
    if REFUSED_TYPE.encode() not in raw:
        return None
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        return None
    if isinstance(error, dict) and error.get("type") == REFUSED_TYPE and isinstance(error.get("message"), str):
        return error["message"]
    return None
