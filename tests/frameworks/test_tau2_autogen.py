"""AutoGen AgentChat on τ² tasks, against the real mock server with scripted tool calls: the domain's tools as
AgentChat tools, every call run against the episode's environment and recorded tied to its message, τ²'s reward
as the native loop gets it, tool errors as results, τ²'s limits, and the run path with its wire log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import backend_for
from mock_openai import MockOpenAI

from helpers import write_yaml
from testbed.control_tokens import ControlTokens
from testbed.frameworks.tool_episode import ToolEpisode, step_loop
from testbed.orchestrator import TerminationReason
from testbed.participants import TurnSampling
from testbed.specs.agent import AgentSpec, SamplingSpec
from testbed.specs.loader import ResolvedAgent, load_scenario

pytest.importorskip("autogen_agentchat")
pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from testbed.frameworks.autogen_tools import FRAMEWORK_SPEAKER, run_task  # noqa: E402
from testbed.runner import run_scenario  # noqa: E402
from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.episode import start_episode  # noqa: E402
from testbed.scenarios.tau2.evaluation import evaluate  # noqa: E402
from testbed.scenarios.tau2.oracle import expected_calls  # noqa: E402
from testbed.scenarios.tau2.participants import GoalUser, ToolAssistant  # noqa: E402
from testbed.scenarios.tau2.prompts import assistant_prompt, user_prompt  # noqa: E402

TASK = "create_task_1"
STOPPING_USER = "SAY_MARKER_AT:3:###STOP###\n\n{guidelines}\n\n<scenario>\n{scenario}\n</scenario>\n"
"""τ²'s user prompt with the mock's marker rule: the user stops on its second turn (greeting, its turn, the assistant's)."""
TALKING_USER = "{guidelines}\n\n<scenario>\n{scenario}\n</scenario>\n"


def script_of(calls) -> list[list[dict]]:
    """One scripted step making `calls` (testbed ToolCalls), arguments as objects."""
    return [[{"name": c.name, "arguments": json.loads(c.arguments)} for c in calls]]


def episode_on(base_url: str, *, domain_name: str = "mock", task_id: str = TASK, prompt: str = STOPPING_USER,
               max_steps: int = 30, max_errors: int = 10) -> ToolEpisode:
    """A τ² episode whose assistant and user are the mock server (the testbed's own backend, as a run builds it)."""
    d = domain(domain_name)
    task = d.tasks[task_id]
    helper = ResolvedAgent(AgentSpec(name="helper", backend="vllm", model="mock", base_url=base_url,
                                     sampling=SamplingSpec(temperature=0.0, max_tokens=64)), Path("helper.yaml"), None)
    simuser = ResolvedAgent(AgentSpec(name="simuser", backend="vllm", model="mock", base_url=base_url), Path("simuser.yaml"), None)
    backend = backend_for(base_url)
    assistant = ToolAssistant(helper, backend, d.tools, ControlTokens(), TurnSampling(0.0, 64, 1.0, 7, False))
    user = GoalUser(simuser, backend, "instructed", user_prompt(prompt, task, with_tools=bool(d.user_tools)), d.user_tools,
                    ControlTokens(), TurnSampling(0.5, 48, 1.0, 3, True))
    transcript, desk = start_episode(task, d.new_environment, assistant_prompt(d.policy), "helper")
    return ToolEpisode(transcript, assistant, user, desk, max_steps, max_errors)


async def test_the_expected_calls_run_in_the_environment_and_score_as_the_native_loop_does():
    d = domain("mock")
    task = d.tasks[TASK]
    expected = expected_calls(task)
    async with MockOpenAI(tool_script=script_of(expected)) as mock:
        episode = episode_on(mock.base_url)
        reason = await run_task(episode)
    messages = episode.transcript.messages
    assert reason is TerminationReason.USER_STOP
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    call_message, result = messages[3], messages[4]
    assert [(c.name, json.loads(c.arguments)) for c in call_message.tool_calls] == [(c.name, json.loads(c.arguments)) for c in expected]
    assert [c.id for c in call_message.tool_calls] == [c["id"] for c in mock.calls]
    assert call_message.speaker == "helper" and call_message.usage.completion_tokens > 0 and call_message.sampling is not None
    assert result.tool_result.call_id == call_message.tool_calls[0].id and result.tool_result.requestor == "assistant"
    assert not result.tool_result.error and result.speaker == "environment"
    assert json.loads(result.content)["title"] == json.loads(expected[0].arguments)["title"]
    assert messages[5].content == mock.replies[2] and messages[6].content == mock.replies[3].replace(" ###STOP###", "")
    assert [m.turn_index for m in messages] == list(range(len(messages)))
    created = episode.desk.environment.tools.db.tasks
    assert any(t.title == json.loads(expected[0].arguments)["title"] for t in created.values()), "the call changed the database"

    autogen_reward = evaluate(d, task, messages, reason)
    async with MockOpenAI(tool_script=script_of(expected)) as mock:
        native = episode_on(mock.base_url)
        native_reason = await step_loop(native)
        await native.assistant.backend.close()
    native_reward = evaluate(d, task, native.transcript.messages, native_reason)
    assert autogen_reward.reward == native_reward.reward == 1.0
    assert autogen_reward.breakdown == native_reward.breakdown
