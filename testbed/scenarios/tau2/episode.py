"""One τ² episode's start: a fresh environment with the task's initial state, and the transcript's opening.

The tool desk and τ²'s stop signals are testbed.frameworks.tool_desk's, and the loop and its step
rules testbed.frameworks.tool_episode's: every framework runs an episode on them.
"""

from __future__ import annotations

from typing import Any

from testbed.frameworks.tool_desk import ToolDesk
from testbed.scenarios.tau2.trajectory import GREETING, SCRIPTED, from_tau2
from testbed.transcript import Message, Transcript


def start_episode(task: Any, new_environment, system_prompt: str, speaker: str,
                  episode_id: str | None = None) -> tuple[Transcript, ToolDesk]:
    """The transcript's opening (the assistant's system prompt, then the task's message history or τ²'s greeting) and a
    fresh environment with the task's initial state applied, both sides (τ²'s `set_state`). `episode_id` is the stored
    episode's id, which the assistant's requests carry (an agent's `AgentTurn.episode_id`)."""
    environment = new_environment()
    state = task.initial_state
    history = list(state.message_history or []) if state is not None else []
    environment.set_state(initialization_data=state.initialization_data if state is not None else None,
                          initialization_actions=state.initialization_actions if state is not None else None,
                          message_history=history)
    transcript = Transcript() if episode_id is None else Transcript.of_episode(episode_id)
    transcript.append(Message("system", system_prompt, speaker, 0))
    opening = from_tau2(history, 1) if history else [Message("assistant", GREETING, SCRIPTED, 1)]
    for m in opening:
        transcript.append(m)
    return transcript, ToolDesk(environment, environment_response)


def environment_response(environment: Any, call_id: str, name: str, arguments: dict, requestor: str) -> tuple[str, bool]:
    """τ²'s environment's answer to one tool call (as τ²'s ToolCall): its text, and whether it is a tool error."""
    from tau2.data_model.message import ToolCall as Tau2Call

    reply = environment.get_response(Tau2Call(id=call_id, name=name, arguments=arguments, requestor=requestor))
    return reply.content or "", bool(reply.error)
