"""τ²'s own verdict on a stored episode, reached without the testbed's scoring code, two ways.

`rescored`: the episode rebuilt row by row from the store with τ²'s message classes (never through
testbed.scenarios.tau2.trajectory or evaluation) as a `SimulationRun`, scored by τ²'s `evaluate_simulation`
on τ²'s own registered domain. `orchestrated`: the same script played by τ²'s own `Orchestrator`, with a
scripted τ² agent and user, on a fresh environment from τ²'s registry; its SimulationRun scored the same
way. The testbed's stored reward is held to both.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tau2_script_server import Reply

from testbed.frameworks.tool_desk import ENVIRONMENT

TAU2_TERMINATION = {"transfer": "user_stop"}
"""The testbed's terminations that τ² names otherwise (its user stop covers `###TRANSFER###`); the rest share names."""
AGENT_STOP = "###STOP###"


@dataclass(frozen=True)
class Verdict:
    """τ²'s termination and reward for an episode, or the evaluator's failure (`raised`, its exception's type)."""

    termination: str
    reward: float | None
    breakdown: dict[str, float] | None
    raised: str | None = None


def scored(run: Any, task: Any, domain_name: str) -> Verdict:
    """τ²'s `evaluate_simulation` (every criterion, as `tau2 run` scores) on the run, or the exception it raised."""
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    termination = str(run.termination_reason.value)
    try:
        info = evaluate_simulation(run, task, EvaluationType.ALL, solo_mode=False, domain=domain_name)
    except Exception as exc:  # τ²'s evaluator raises for some trajectories; the suite compares that outcome too
        return Verdict(termination, None, None, type(exc).__name__)
    breakdown = {getattr(k, "value", str(k)): float(v) for k, v in (info.reward_breakdown or {}).items()}
    return Verdict(termination, float(info.reward), breakdown)


def tau2_messages(rows: list[Any]) -> list[Any]:
    """The stored rows (testbed messages) as τ²'s messages, system prompts left out.

    A call that a framework answered in its own words (an unknown tool, arguments it would not parse: the result's
    speaker is not the environment) never reached the episode's environment, so it is left out with its answer: τ²'s
    evaluator replays every call of a trajectory and expects its stored result back, and τ²'s own loop would have
    answered such a call with an error that changes nothing. A message left without calls keeps its text.
    """
    import json

    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage

    kinds = {"assistant": AssistantMessage, "user": UserMessage}
    out = []
    for i, m in enumerate(rows):
        if m.role == "tool":
            if m.speaker == ENVIRONMENT:
                out.append(ToolMessage(id=m.tool_result.call_id, role="tool", content=m.content,
                                       requestor=m.tool_result.requestor, error=m.tool_result.error))
        elif m.role in kinds:
            batch = []
            for r in rows[i + 1:]:
                if r.role != "tool":
                    break
                batch.append(r)
            foreign = {r.tool_result.call_id for r in batch if r.speaker != ENVIRONMENT}
            calls = [ToolCall(id=c.id, name=c.name, arguments=json.loads(c.arguments), requestor=m.role)
                     for c in m.tool_calls if c.id not in foreign]
            if calls or m.content or not m.tool_calls:
                out.append(kinds[m.role](role=m.role, content=m.content or None, tool_calls=calls or None))
    return out


def rescored(store, run_id: str, episode, task: Any, domain_name: str) -> Verdict:
    """τ²'s verdict on the stored episode, rebuilt from the store's rows with τ²'s own message classes."""
    from tau2.data_model.simulation import SimulationRun

    termination = TAU2_TERMINATION.get(episode.termination, episode.termination)
    run = SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time="0", end_time="0", duration=0.0,
                        termination_reason=termination, messages=tau2_messages(store.messages(run_id, episode.episode_id)))
    return scored(run, task, domain_name)


def _tau2_message(kind: type, role: str, reply: Reply) -> Any:
    from tau2.data_model.message import ToolCall

    calls = [ToolCall(id=c.id or "", name=c.name, arguments=dict(c.arguments), requestor=role) for c in reply.calls]
    return kind(role=role, content=reply.text, tool_calls=calls or None)


def scripted_agent(replies: list[Reply]) -> Any:
    """A τ² agent (BaseAgent) saying `replies` in order, the last one for ever; it stops on `###STOP###` in its text,
    the testbed's assistant stop signal (τ²'s Orchestrator ends on whatever its agent's `is_stop` says)."""
    from tau2.agent.base import BaseAgent
    from tau2.data_model.message import AssistantMessage

    class ScriptedAgent(BaseAgent):
        said = 0

        def generate_next_message(self, message, state):
            reply = replies[min(self.said, len(replies) - 1)]
            self.said += 1
            return _tau2_message(AssistantMessage, "assistant", reply), state

        def get_init_state(self, message_history=None):
            return None

        def stop(self, message=None, state=None) -> None:
            """Nothing to release."""

        def set_seed(self, seed: int) -> None:
            """A script has no randomness."""

        @classmethod
        def is_stop(cls, message) -> bool:
            return bool(message.content) and AGENT_STOP in message.content

    return ScriptedAgent()


def scripted_user(replies: list[Reply]) -> Any:
    """A τ² user (BaseUser) saying `replies` in order, the last one for ever; it stops as τ²'s UserSimulator stops."""
    from tau2.data_model.message import UserMessage
    from tau2.user.base import BaseUser
    from tau2.user.user_simulator import UserSimulator

    class ScriptedUser(BaseUser):
        said = 0

        def generate_next_message(self, message, state):
            reply = replies[min(self.said, len(replies) - 1)]
            self.said += 1
            return _tau2_message(UserMessage, "user", reply), state

        def get_init_state(self, message_history=None):
            return None

        def set_seed(self, seed: int) -> None:
            """A script has no randomness."""

        @classmethod
        def is_stop(cls, message) -> bool:
            return UserSimulator.is_stop(message)

    return ScriptedUser()


def orchestrated(task: Any, domain_name: str, script: dict[str, list[Reply]], max_steps: int, max_errors: int) -> Verdict:
    """τ²'s verdict on the script played by τ²'s own Orchestrator on a fresh environment of its own domain."""
    from tau2.orchestrator.orchestrator import Orchestrator
    from tau2.registry import registry

    environment = registry.get_env_constructor(domain_name)()
    orchestrator = Orchestrator(domain=domain_name, agent=scripted_agent(script["assistant"]), user=scripted_user(script["user"]),
                                environment=environment, task=task, max_steps=max_steps, max_errors=max_errors)
    return scored(orchestrator.run(), task, domain_name)
