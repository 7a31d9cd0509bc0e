"""The testbed's own turn loop: assistant and simulated user alternate until a typed stop."""

from __future__ import annotations

from testbed.frameworks.base import AfterAssistant
from testbed.frameworks.catalogue import NATIVE
from testbed.frameworks.tool_episode import ToolEpisode, step_loop
from testbed.loop.orchestrator import Limits, TerminationReason, strip_marker
from testbed.loop.participants import Participant
from testbed.transcript import Transcript, is_assistant


class NativeFramework:
    """Alternates `respond` calls on one transcript; the end marker is stripped and becomes USER_STOP.

    After every turn it asks `Limits.first_stop`, the testbed's one stop order, with `after_assistant`
    (e.g. information gathering's final output) as the final-output check after an assistant turn.
    """

    name = NATIVE.name

    async def converse(self, transcript: Transcript, assistant: Participant, user: Participant, limits: Limits,
                       after_assistant: AfterAssistant | None = None) -> TerminationReason:
        """Run the loop from whoever speaks next; return why it ended."""
        dialogue = transcript.dialogue()
        user_next = bool(dialogue) and is_assistant(dialogue[-1])
        while True:
            if not user_next:
                reply, _ = strip_marker(await assistant.respond(transcript), limits.end_marker)
                transcript.append(reply)
                final = None if after_assistant is None else (lambda: after_assistant(reply, transcript))
                if reason := limits.first_stop(transcript, final_output=final):
                    return reason
            turn, stopped = strip_marker(await user.respond(transcript), limits.end_marker)
            if turn.content or not stopped:
                transcript.append(turn)
            if reason := limits.first_stop(transcript, user_stopped=stopped):
                return reason
            user_next = False

    async def run_task(self, episode: ToolEpisode) -> TerminationReason:
        """Run a τ² task with the testbed's step loop (τ²'s orchestrator, step for step)."""
        return await step_loop(episode)
