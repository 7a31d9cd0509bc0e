"""What every framework is given to run one τ² task: the episode's transcript, its two sides, its environment, its limits.

A framework runs a task its own way (its agents, its tool objects, its loop) and records what
happens through the episode, so every framework's transcript has the same shape: the assistant's
tool calls as assistant messages with `tool_calls`, each result as a `tool` message tied to its call,
the user's turns with τ²'s stop signals stripped. Tool calls always run against the episode's
environment (`call_tool`), which the testbed owns and τ²'s evaluator later replays, whichever
framework asked for them.

Steps and limits follow τ²'s orchestrator: a step is one generation (a stop signal included) or one
batch of tool results; the step and tool-error limits are checked whenever the next message is not for
the environment, after a stop signal too, so a stop on the last allowed step ends as `max_steps`.
Once the episode has stopped (a signal or a limit) nothing more is recorded, so a framework that
overshoots its own stop by a message leaves the transcript as the native loop would.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from testbed.frameworks.pair import Pair, Side, endpoint_of
from testbed.loop.orchestrator import TerminationReason
from testbed.frameworks.tool_desk import AGENT_SIGNAL, USER_SIGNALS, ToolDesk, next_side, strip_signals
from testbed.transcript import Message, ToolCall, ToolResult, Transcript


@dataclass
class ToolEpisode:
    """One τ² episode as a framework runs it.

    `assistant` is a ToolAssistant and `user` a GoalUser (testbed.scenarios.tau2.participants), already
    routed through the wire recorder when the run keeps a wire log; the transcript starts with the
    assistant's system prompt and the task's opening (τ²'s greeting or its message history).
    """

    transcript: Transcript
    assistant: Any
    user: Any
    desk: ToolDesk
    max_steps: int
    max_errors: int
    steps: int = field(default=0, init=False)
    stopped: TerminationReason | None = field(default=None, init=False)

    @property
    def system_prompt(self) -> str:
        """The assistant's system prompt: τ²'s agent instructions and the domain policy."""
        return self.transcript.messages[0].content

    def tools(self, side: str) -> list[dict[str, Any]]:
        """The OpenAI tool schemas of `side` (`assistant`, or `user` in telecom; empty when it has none)."""
        return list((self.assistant if side == "assistant" else self.user).tools or [])

    def pair(self) -> Pair:
        """Both sides' settings for a framework's model clients: endpoint, system prompt, sampling."""
        a, u = self.assistant, self.user
        return Pair(Side(a.agent.spec.name, endpoint_of(a), self.system_prompt, a.sampling),
                    Side(u.agent.spec.name, endpoint_of(u), u.prompt, u.sampling))

    def opening(self) -> list[Message]:
        """The spoken conversation so far (what a framework is started with); the last turn is the assistant's."""
        return self.transcript.dialogue()

    def call_tool(self, call: ToolCall, requestor: str = "assistant") -> Message:
        """Run one call against the episode's environment; its result message, not yet recorded (τ²'s tool
        error for arguments that are not a JSON object, an unknown tool or bad arguments)."""
        return self.desk.answer(call, requestor, self.transcript.next_turn)

    def reject(self, call_id: str, name: str, content: str, requestor: str, speaker: str) -> Message:
        """The error result of a call the framework answered itself (an unknown tool, arguments it would not parse),
        in its own words, counted as a tool error as τ² counts every error result; not yet recorded. Its speaker is
        the framework, so τ²'s evaluator, which replays the environment's calls, leaves the call out."""
        self.desk.errors += 1
        return Message("tool", content, speaker, self.transcript.next_turn, tool_result=ToolResult(call_id, name, requestor, error=True))

    def record(self, message: Message) -> TerminationReason | None:
        """Append a generated message (a text turn or tool calls) and count its step; the stop, when this ends the episode.

        A text turn's stop signal is stripped (an emptied turn is not kept) and becomes the termination.
        """
        if self.stopped is not None:
            return self.stopped
        side = message.role
        message, signal = strip_signals(message, USER_SIGNALS if side == "user" else (AGENT_SIGNAL,))
        if message.content or message.tool_calls or signal is None:
            self.transcript.append(replace(message, turn_index=self.transcript.next_turn))
        self.steps += 1
        if signal is not None:
            self.stopped = USER_SIGNALS[signal] if side == "user" else TerminationReason.AGENT_STOP
            return self.stopped if message.tool_calls else self._limit()
        return None if message.tool_calls else self._limit()

    def record_results(self, results: list[Message]) -> TerminationReason | None:
        """Append one batch of tool results (the answers to the last tool-call message) as one step."""
        if self.stopped is not None:
            return self.stopped
        for result in results:
            self.transcript.append(replace(result, turn_index=self.transcript.next_turn))
        self.steps += 1
        return self._limit()

    def _limit(self) -> TerminationReason | None:
        """The limits as τ²'s `Orchestrator.run` checks them after every step not bound for the environment: a
        stop signal is a step too, so a stop on the last allowed step ends as `max_steps`, and the error limit is
        checked last, so it wins when both are reached."""
        if self.steps >= self.max_steps:
            self.stopped = TerminationReason.MAX_STEPS
        if self.desk.errors >= self.max_errors:
            self.stopped = TerminationReason.TOO_MANY_ERRORS
        return self.stopped


async def step_loop(episode: ToolEpisode) -> TerminationReason:
    """The native loop, τ²'s orchestrator step for step: a generated message goes to the user, the assistant
    or, when it calls tools, to the environment, whose results go back to whoever called; until a stop.
    A BackendError from either side propagates with the transcript so far."""
    transcript = episode.transcript
    side = next_side(transcript.messages[-1])
    while True:
        if side == "environment":
            caller = transcript.messages[-1]
            stop = episode.record_results([episode.call_tool(call, caller.role) for call in caller.tool_calls])
            side = caller.role
        else:
            message = await (episode.user if side == "user" else episode.assistant).respond(transcript)
            stop = episode.record(message)
            side = next_side(message)
        if stop is not None:
            return stop
