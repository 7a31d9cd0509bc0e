"""The oracle assistant: a task's expected actions replayed as tool calls, then what it must communicate, then stop.

It checks the wiring from environment to evaluator, not a model: on every task whose criteria are
the assistant's actions, the database and the information communicated, an episode it plays must
score reward 1.0 by τ²'s evaluator, and one with a wrong action must score 0. The tests run it over
every mock task and a sample of airline and retail; a researcher can run it the same way after
installing another τ² version (`oracle_episode`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from testbed.frameworks.tool_desk import AGENT_SIGNAL
from testbed.transcript import Message, ToolCall, Transcript


def expected_calls(task: Any) -> list[ToolCall]:
    """The assistant's expected actions of a task, as tool calls in order."""
    actions = (task.evaluation_criteria.actions or []) if task.evaluation_criteria is not None else []
    return [ToolCall(f"oracle_{i}", a.name, json.dumps(a.arguments)) for i, a in enumerate(actions) if a.requestor == "assistant"]


def final_words(task: Any) -> str:
    """Everything the task expects the assistant to tell the user, then τ²'s assistant stop signal."""
    info = (task.evaluation_criteria.communicate_info or []) if task.evaluation_criteria is not None else []
    return " ".join(["Done.", *map(str, info), AGENT_SIGNAL])


@dataclass
class OracleAssistant:
    """A participant that makes each of `calls` in its own message, then says `final_words` (both default to the task's)."""

    calls: list[ToolCall]
    words: str
    name: str = "oracle"
    _made: int = field(default=0, init=False)

    @classmethod
    def for_task(cls, task: Any) -> "OracleAssistant":
        """The oracle of one task."""
        return cls(expected_calls(task), final_words(task))

    async def respond(self, transcript: Transcript) -> Message:
        """The next expected call, or the final words once every call was made."""
        if self._made < len(self.calls):
            call = self.calls[self._made]
            self._made += 1
            return Message("assistant", "", self.name, transcript.next_turn, tool_calls=(call,))
        return Message("assistant", self.words, self.name, transcript.next_turn)


@dataclass
class SilentUser:
    """A user who asks once and then only waits: enough for the oracle, which needs no answers."""

    name: str = "user"

    async def respond(self, transcript: Transcript) -> Message:
        """A fixed request."""
        return Message("user", "Please take care of my request.", self.name, transcript.next_turn)


async def oracle_episode(domain_name: str, task_id: str, assistant: Any = None):
    """Play one task with the oracle (or `assistant`) and a silent user; the transcript, termination and τ²'s reward."""
    from testbed.scenarios.tau2.domains import domain
    from testbed.frameworks.tool_episode import ToolEpisode, step_loop
    from testbed.scenarios.tau2.episode import start_episode
    from testbed.scenarios.tau2.evaluation import evaluate

    d = domain(domain_name)
    task = d.tasks[task_id]
    transcript, desk = start_episode(task, d.new_environment, "oracle", "oracle")
    episode = ToolEpisode(transcript, assistant or OracleAssistant.for_task(task), SilentUser(), desk, max_steps=200, max_errors=10)
    termination = await step_loop(episode)
    return transcript, termination, evaluate(d, task, transcript.messages, termination)
