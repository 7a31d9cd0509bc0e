"""The one place a multi-turn loop runs: assistant and simulated user alternate until a typed stop.

Stopping is an event, not text: the simulated user's end marker is detected here, stripped from
what is stored, and reported as a termination reason. Participants only produce messages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from testbed.transcript import Message, Transcript

Respond = Callable[[Transcript], Awaitable[Message]]

USER_STOP = "user_stop"
MAX_TURNS = "max_turns"
TOKEN_BUDGET = "token_budget"
ASSISTANT_DONE = "assistant_done"
ERROR = "error"


@dataclass(frozen=True)
class Limits:
    """When a conversation ends: user turns (the opening one included), a token budget, the end marker."""

    max_user_turns: int
    token_budget: int
    end_marker: str


def strip_marker(message: Message, marker: str) -> tuple[Message, bool]:
    """The message without the end marker, and whether it carried one."""
    if marker not in message.content:
        return message, False
    return replace(message, content=message.content.replace(marker, "").strip()), True


def user_turn_count(transcript: Transcript) -> int:
    """User messages so far, the opening one included."""
    return sum(m.role == "user" for m in transcript.messages)


async def converse(
    transcript: Transcript,
    assistant: Respond,
    user: Respond,
    limits: Limits,
    after_assistant: Callable[[Message, Transcript], str | None] | None = None,
) -> str:
    """Alternate assistant and user turns on `transcript` (which ends with a user turn); return why it ended.

    A BackendError from either side propagates; the caller records it with the transcript so far.
    """
    while True:
        reply, _ = strip_marker(await assistant(transcript), limits.end_marker)
        transcript.append(reply)
        if transcript.usage().completion_tokens >= limits.token_budget:
            return TOKEN_BUDGET
        if after_assistant is not None and (reason := after_assistant(reply, transcript)):
            return reason
        if user_turn_count(transcript) >= limits.max_user_turns:
            return MAX_TURNS
        turn, stopped = strip_marker(await user(transcript), limits.end_marker)
        if stopped:
            if turn.content:
                transcript.append(turn)
            return USER_STOP
        transcript.append(turn)
        if transcript.usage().completion_tokens >= limits.token_budget:
            return TOKEN_BUDGET
