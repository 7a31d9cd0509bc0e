"""Between the testbed's transcript and τ²'s messages: a task's opening history in, a finished episode out for τ²'s evaluator."""

from __future__ import annotations

import json
from typing import Any

from testbed.frameworks.tool_desk import ENVIRONMENT
from testbed.transcript import Message, ToolCall, ToolResult, is_system, is_tool

SCRIPTED = "tau2"
"""The speaker of messages the task wrote rather than a model (τ²'s greeting, a task's message history)."""
GREETING = "Hi! How can I help you today?"
"""τ²'s first assistant message (its orchestrator's DEFAULT_FIRST_AGENT_MESSAGE) when a task has no message history."""


def from_tau2(messages: list[Any], first_turn: int) -> list[Message]:
    """τ² messages (a task's `initial_state.message_history`) as testbed messages from turn `first_turn`."""
    out: list[Message] = []
    for m in messages:
        turn = first_turn + len(out)
        if is_tool(m):
            out.append(Message("tool", m.content or "", ENVIRONMENT, turn,
                               tool_result=ToolResult(m.id, _call_name(out, m.id), m.requestor, bool(m.error))))
            continue
        calls = tuple(ToolCall(c.id, c.name, json.dumps(c.arguments)) for c in m.tool_calls or ())
        out.append(Message(m.role, m.content or "", SCRIPTED, turn, tool_calls=calls))
    return out


def _call_name(earlier: list[Message], call_id: str) -> str:
    for m in reversed(earlier):
        for c in m.tool_calls:
            if c.id == call_id:
                return c.name
    return ""


def to_tau2(messages: list[Message]) -> list[Any]:
    """The episode as τ²'s messages, for its evaluator.

    System prompts are left out (τ²'s trajectories hold none). A tool call that never reached the
    environment (arguments that are not a JSON object, which the testbed answers itself, or a call a
    framework answered in its own words: its result's speaker is not the environment) is left out with
    its result: τ²'s evaluator replays every call on a fresh environment and expects the stored result
    back, which such a call cannot give. Text written in the same message as a call stays beside it, as
    τ²'s own loop keeps it (its communicate check reads it); a message whose every call was left out keeps
    its text alone.
    """
    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.data_model.message import ToolCall as Tau2Call

    kinds = {"assistant": AssistantMessage, "user": UserMessage}
    skipped = {m.tool_result.call_id for m in messages if m.tool_result is not None and m.speaker != ENVIRONMENT}
    out: list[Any] = []
    for m in messages:
        if is_system(m):
            continue
        if is_tool(m):
            if m.tool_result is not None and m.tool_result.call_id not in skipped:
                out.append(ToolMessage(id=m.tool_result.call_id, role="tool", content=m.content,
                                       requestor=m.tool_result.requestor, error=m.tool_result.error))
            continue
        if m.tool_calls:
            calls = []
            for c in m.tool_calls:
                arguments = c.parsed_arguments()
                if arguments is None or c.id in skipped:
                    skipped.add(c.id)
                else:
                    calls.append(Tau2Call(id=c.id, name=c.name, arguments=arguments, requestor=m.role))
            if calls:
                out.append(kinds[m.role](role=m.role, content=m.content or None, tool_calls=calls))
            elif m.content:
                out.append(kinds[m.role](role=m.role, content=m.content))
            continue
        out.append(kinds[m.role](role=m.role, content=m.content))
    return out
