"""The testbed's own turn loop: assistant and simulated user alternate until a typed stop."""

from __future__ import annotations

from testbed.frameworks.base import AfterAssistant
from testbed.orchestrator import Limits, TerminationReason, over_budget, strip_marker, user_turn_count
from testbed.participants import Participant
from testbed.transcript import Transcript


class NativeFramework:
    """Alternates `respond` calls on one transcript; the end marker is stripped and becomes USER_STOP.

    After an assistant turn: the token budget, then `after_assistant` (e.g. information gathering's
    final output), then the user-turn limit. After a user turn: its end marker, then the budget,
    then (when the last user turn gets no reply) the user-turn limit.
    """

    name = "native"

    async def converse(self, transcript: Transcript, assistant: Participant, user: Participant, limits: Limits,
                       after_assistant: AfterAssistant | None = None) -> TerminationReason:
        """Run the loop from whoever speaks next; return why it ended."""
        dialogue = transcript.dialogue()
        user_next = bool(dialogue) and dialogue[-1].role == "assistant"
        while True:
            if not user_next:
                reply, _ = strip_marker(await assistant.respond(transcript), limits.end_marker)
                transcript.append(reply)
                if over_budget(transcript, limits):
                    return TerminationReason.TOKEN_BUDGET
                if after_assistant is not None and (reason := after_assistant(reply, transcript)):
                    return reason
                if user_turn_count(transcript) >= limits.max_user_turns:
                    return TerminationReason.MAX_TURNS
            turn, stopped = strip_marker(await user.respond(transcript), limits.end_marker)
            if stopped:
                if turn.content:
                    transcript.append(turn)
                return TerminationReason.USER_STOP
            transcript.append(turn)
            if over_budget(transcript, limits):
                return TerminationReason.TOKEN_BUDGET
            if not limits.reply_to_last_user_turn and user_turn_count(transcript) >= limits.max_user_turns:
                return TerminationReason.MAX_TURNS
            user_next = False
