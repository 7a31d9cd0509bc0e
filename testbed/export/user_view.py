"""What a simulated user saw of its conversation, as the chat messages a user-turn training row is prompted with.

A user-turn row must be prompted with what the user could read when it wrote the turn, nothing
more: the spoken messages (`Message.spoken`: user and assistant messages that call no tool), never
the assistant's tool calls or the results of its tools, which the user never saw. In dual-control
tasks (τ² telecom) the user also acts through its own tools; those calls and their results are
part of what it saw, so they are kept, in the OpenAI chat form `Message.as_chat` gives them with
true roles: a `user` message with `tool_calls` (its `content` null when it said nothing) and one
`{"role": "tool", "tool_call_id": ..., "content": ...}` message per result. System prompts are
the generator's instructions, not the conversation, and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from testbed.transcript import Message, is_tool, is_user


def seen_by_user(message: Message) -> bool:
    """Whether the simulated user saw this message: a spoken one, or its own tool call or that call's result."""
    if message.spoken:
        return True
    if is_user(message) and message.tool_calls:
        return True
    return is_tool(message) and message.tool_result is not None and message.tool_result.requestor == "user"


def user_contexts(messages: Sequence[Message], wanted: Iterable[int]) -> dict[int, list[dict]]:
    """For each turn index in `wanted`, the chat messages the user had seen before it (`messages` in turn order)."""
    wanted = set(wanted)
    out: dict[int, list[dict]] = {}
    seen: list[dict] = []
    for m in messages:
        if m.turn_index in wanted:
            out[m.turn_index] = list(seen)
        if seen_by_user(m):
            seen.append(m.as_chat())
    return out
