"""One τ² episode's parts: a fresh environment with the task's initial state, its tool desk, τ²'s stop signals.

Stop signals are events, stripped from the stored text like every end marker: the user's
`###STOP###`, `###TRANSFER###` or `###OUT-OF-SCOPE###`, the assistant's `###STOP###`. The loop that
runs an episode, and its step rules, are testbed.frameworks.tool_episode's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from testbed.orchestrator import TerminationReason
from testbed.scenarios.tau2.trajectory import GREETING, SCRIPTED, from_tau2, parsed_arguments
from testbed.transcript import Message, ToolCall, ToolResult, Transcript

USER_SIGNALS = {"###STOP###": TerminationReason.USER_STOP, "###TRANSFER###": TerminationReason.TRANSFER,
                "###OUT-OF-SCOPE###": TerminationReason.USER_STOP}
"""τ²'s user stop signals and the termination each means."""
AGENT_SIGNAL = "###STOP###"
"""τ²'s assistant stop signal."""


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
    """The episode's τ² environment: tool calls in, tool messages out, failures counted."""

    environment: Any
    errors: int = 0

    def answer(self, call: ToolCall, requestor: str, turn: int) -> Message:
        """Run one call; arguments that are not a JSON object, an unknown tool or bad arguments give τ²'s tool error."""
        from tau2.data_model.message import ToolCall as Tau2Call

        arguments = parsed_arguments(call)
        if arguments is None:
            content, error = f"Error: the arguments of {call.name} are not a JSON object: {call.arguments[:200]}", True
        else:
            reply = self.environment.get_response(Tau2Call(id=call.id, name=call.name, arguments=arguments, requestor=requestor))
            content, error = reply.content or "", bool(reply.error)
        self.errors += error
        return Message("tool", content, "environment", turn, tool_result=ToolResult(call.id, call.name, requestor, error))


def start_episode(task: Any, new_environment, system_prompt: str, speaker: str) -> tuple[Transcript, ToolDesk]:
    """The transcript's opening (the assistant's system prompt, then the task's message history or τ²'s greeting) and a
    fresh environment with the task's initial state applied, both sides (τ²'s `set_state`)."""
    environment = new_environment()
    state = task.initial_state
    history = list(state.message_history or []) if state is not None else []
    environment.set_state(initialization_data=state.initialization_data if state is not None else None,
                          initialization_actions=state.initialization_actions if state is not None else None,
                          message_history=history)
    transcript = Transcript()
    transcript.append(Message("system", system_prompt, speaker, 0))
    opening = from_tau2(history, 1) if history else [Message("assistant", GREETING, SCRIPTED, 1)]
    for m in opening:
        transcript.append(m)
    return transcript, ToolDesk(environment)


def next_side(last: Message) -> str:
    """Who acts after `last`: `user`, `assistant`, or `environment` when it calls tools."""
    if last.tool_calls:
        return "environment"
    if last.role == "tool":
        return last.tool_result.requestor if last.tool_result is not None else "assistant"
    return "user" if last.role == "assistant" else "assistant"
