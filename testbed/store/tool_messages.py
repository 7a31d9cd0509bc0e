"""How a message's tool calls and tool result are kept in the messages table: two JSON columns, NULL when absent."""

from __future__ import annotations

import json
from typing import Any

from testbed.store.text import storable
from testbed.transcript import Message, ToolCall, ToolResult


def tool_columns(message: Message) -> tuple[str | None, str | None]:
    """The (tool_calls_json, tool_result_json) column values of a message."""
    calls = json.dumps([{"id": c.id, "name": storable(c.name), "arguments": storable(c.arguments)} for c in message.tool_calls]) \
        if message.tool_calls else None
    r = message.tool_result
    result = json.dumps({"call_id": r.call_id, "name": storable(r.name), "requestor": r.requestor, "error": r.error}) if r else None
    return calls, result


def tool_fields(row: Any) -> dict[str, Any]:
    """The Message fields held in a stored row's tool columns (none for a row read before they existed)."""
    keys = row.keys()
    out: dict[str, Any] = {}
    if "tool_calls_json" in keys and row["tool_calls_json"]:
        out["tool_calls"] = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in json.loads(row["tool_calls_json"]))
    if "tool_result_json" in keys and row["tool_result_json"]:
        r = json.loads(row["tool_result_json"])
        out["tool_result"] = ToolResult(r["call_id"], r["name"], r.get("requestor", "assistant"), bool(r.get("error")))
    return out
