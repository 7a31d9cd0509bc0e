"""The parts of a τ² episode every framework shares: the tool desk over the episode's environment, and τ²'s stop signals.

Stop signals are events, stripped from the stored text like every end marker: the user's
`###STOP###`, `###TRANSFER###` or `###OUT-OF-SCOPE###`, the assistant's `###STOP###`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from testbed.loop.orchestrator import TerminationReason
from testbed.transcript import Message, ToolCall, ToolResult, is_assistant, is_tool

USER_SIGNALS = {"###STOP###": TerminationReason.USER_STOP, "###TRANSFER###": TerminationReason.TRANSFER,
                "###OUT-OF-SCOPE###": TerminationReason.USER_STOP}
"""τ²'s user stop signals and the termination each means."""
AGENT_SIGNAL = "###STOP###"
"""τ²'s assistant stop signal."""
ENVIRONMENT = "environment"
"""The speaker of a tool message the episode's environment answered (a framework's own answers carry its name)."""


def strip_signals(message: Message, signals) -> tuple[Message, str | None]:
    """The message without any of `signals`, and the first signal it carried (None when none); tool calls carry none."""
    if message.tool_calls:
        return message, None
    found = next((s for s in signals if s in message.content), None)
    if found is None:
        return message, None
    text = message.content
    for s in signals:
        text = text.replace(s, "")
    return replace(message, content=text.strip()), found


@dataclass
class ToolDesk:
    """The episode's tool environment: tool calls in, tool messages out, failures counted.

    `environment` is the kind's own (τ²'s, with its database), and `respond(environment, call_id, name, arguments,
    requestor) -> (content, error)` how the kind asks it to answer one call: the desk knows no benchmark's types."""

    environment: Any
    respond: Callable[[Any, str, str, dict, str], tuple[str, bool]]
    errors: int = 0

    def answer(self, call: ToolCall, requestor: str, turn: int) -> Message:
        """Run one call; arguments that are not a JSON object or are out of bounds (too long, nested too deep: checked
        before parsing, testbed.tool_arguments), an unknown tool or bad arguments give the environment's tool error."""
        arguments, problem = call.checked_arguments()
        if arguments is None:
            content, error = f"Error: the arguments of {call.name[:200]} {problem}: {call.arguments[:200]}", True
        else:
            content, error = self.respond(self.environment, call.id, call.name, arguments, requestor)
        self.errors += error
        return Message("tool", content, ENVIRONMENT, turn, tool_result=ToolResult(call.id, call.name, requestor, error))



def next_side(last: Message) -> str:
    """Who acts after `last`: `user`, `assistant`, or `environment` when it calls tools."""
    if last.tool_calls:
        return "environment"
    if is_tool(last):
        return last.tool_result.requestor if last.tool_result is not None else "assistant"
    return "user" if is_assistant(last) else "assistant"
