"""What every turn loop shares: why a conversation ended, its limits, and the end marker as an event.

Stopping is an event, not text: the simulated user's end marker is detected by the framework
running the loop (testbed.frameworks), stripped from what is stored, and reported as a
`TerminationReason`. Participants only produce messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from testbed.transcript import Message, Transcript, is_assistant


class TerminationReason(StrEnum):
    """Why an episode ended; stored as its string value."""

    USER_STOP = "user_stop"
    """The simulated user wrote the end marker."""
    MAX_TURNS = "max_turns"
    """The user-turn limit was reached (the probe's single user turn ends this way)."""
    TOKEN_BUDGET = "token_budget"
    """The episode's completion tokens reached the budget."""
    ASSISTANT_DONE = "assistant_done"
    """The assistant gave its final output (information gathering: it answered without asking)."""
    ERROR = "error"
    """A generation failed for good; the episode is stored as an error with its reason."""
    TRANSFER = "transfer"
    """τ² tasks: the simulated user said it was transferred to a human agent (its transfer signal)."""
    AGENT_STOP = "agent_stop"
    """τ² tasks: the assistant ended the conversation (its stop signal)."""
    MAX_STEPS = "max_steps"
    """τ² tasks: the episode reached its step limit (a step is a generated message or a batch of tool results)."""
    TOO_MANY_ERRORS = "too_many_errors"
    """τ² tasks: tool calls failed more often than the task's error limit allows."""


USER_STOP = TerminationReason.USER_STOP
MAX_TURNS = TerminationReason.MAX_TURNS
TOKEN_BUDGET = TerminationReason.TOKEN_BUDGET
ASSISTANT_DONE = TerminationReason.ASSISTANT_DONE
ERROR = TerminationReason.ERROR


@dataclass(frozen=True)
class Limits:
    """When a conversation ends.

    `max_user_turns` counts user turns, the opening one included. `token_budget` caps the episode's
    completion tokens (None: no cap). `end_marker` is what the user writes to stop (None: it
    cannot). `reply_to_last_user_turn` lets the assistant answer the last allowed user turn
    (dialogues); the probe ends on the user turn itself.
    """

    max_user_turns: int
    token_budget: int | None = None
    end_marker: str | None = None
    reply_to_last_user_turn: bool = True

    def first_stop(self, transcript: Transcript, *, user_stopped: bool = False,
                   final_output: Callable[[], TerminationReason | None] | None = None,
                   assistant_done: bool = False) -> TerminationReason | None:
        """The stop that applies first to the conversation so far, or None to go on.

        This is the testbed's one stop order; the native loop and every framework's stop hook (an
        AgentChat termination, a LangGraph edge, the CAMEL loop) ask it after each turn, so a
        conversation ends for the same reason whichever framework runs it. In order:

        1. USER_STOP when the user's last turn stopped (`user_stopped`: it carried the end marker,
           or its framework's own stop), whether or not that turn was stored;
        2. TOKEN_BUDGET once the episode's completion tokens reach the budget;
        3. what `final_output` returns (e.g. information gathering's final answer); callers pass it
           after an assistant turn, and it is asked only when the budget did not end the episode first;
        4. MAX_TURNS once the last allowed user turn is answered, or as soon as it is written when it
           gets no reply (`reply_to_last_user_turn` False);
        5. ASSISTANT_DONE when the framework reports the assistant finished (`assistant_done`).

        Which side spoke last is read from the transcript's last message.
        """
        if user_stopped:
            return TerminationReason.USER_STOP
        if over_budget(transcript, self):
            return TerminationReason.TOKEN_BUDGET
        if final_output is not None and (reason := final_output()):
            return reason
        answered = bool(transcript.messages) and is_assistant(transcript.messages[-1])
        if user_turn_count(transcript) >= self.max_user_turns and (answered or not self.reply_to_last_user_turn):
            return TerminationReason.MAX_TURNS
        return TerminationReason.ASSISTANT_DONE if assistant_done else None


def strip_marker(message: Message, marker: str | None) -> tuple[Message, bool]:
    """The message without the end marker, and whether it carried one."""
    if not marker or marker not in message.content:
        return message, False
    return replace(message, content=message.content.replace(marker, "").strip()), True


def user_turn_count(transcript: Transcript) -> int:
    """User messages so far, the opening one included."""
    return transcript.user_turns()


def over_budget(transcript: Transcript, limits: Limits) -> bool:
    """Whether the episode's generated completion tokens reached the budget."""
    return limits.token_budget is not None and transcript.completion_tokens() >= limits.token_budget
