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
from testbed.loop.orchestrator import TerminationReason
from testbed.loop.participants import TurnSampling
from testbed.specs.agent import AgentSpec, SamplingSpec
from testbed.specs.loader import ResolvedAgent, load_scenario

pytest.importorskip("autogen_agentchat")
pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from testbed.frameworks.autogen_tools import FRAMEWORK_SPEAKER, run_task  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
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
    simuser = ResolvedAgent(AgentSpec(name="simuser", backend="vllm", model="mock", base_url=base_url), Path("simuser.yaml"),
                            None)
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
    made = [(c.name, json.loads(c.arguments)) for c in call_message.tool_calls]
    assert made == [(c.name, json.loads(c.arguments)) for c in expected]
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



async def test_the_requests_carry_taus_tool_schemas_and_the_tool_messages_as_agentchat_sends_them():
    d = domain("mock")
    async with MockOpenAI(tool_script=script_of(expected_calls(d.tasks[TASK]))) as mock:
        episode = episode_on(mock.base_url)
        await run_task(episode)
    messages = episode.transcript.messages
    assistant_requests = [r for r in mock.requests if "tools" in r]
    user_requests = [r for r in mock.requests if "tools" not in r]
    assert len(assistant_requests) == 2 and len(user_requests) == 2
    for request in assistant_requests:
        sent = [t["function"] for t in request["tools"]]
        assert [{k: f[k] for k in ("name", "description", "parameters")} for f in sent] == [t["function"] for t in d.tools]
        assert request["messages"][0] == {"role": "system", "content": messages[0].content}
    call, result = messages[3], messages[4]
    assert assistant_requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": None, "tool_calls": [c.as_chat() for c in call.tool_calls]},
        {"role": "tool", "tool_call_id": call.tool_calls[0].id, "content": result.content}]
    assert [m["role"] for m in assistant_requests[0]["messages"]] == ["system", "assistant", "user"], \
        "the assistant's greeting is its own turn in its context"
    for request in user_requests:
        assert request["messages"][0]["content"] == episode.user.prompt.rstrip(), "AgentChat's client strips the prompt's end"
        assert all(m["role"] in ("system", "user", "assistant") and "tool_calls" not in m for m in request["messages"])
    assert [m["role"] for m in user_requests[1]["messages"]] == ["system", "user", "assistant", "user"], \
        "the user sees the spoken turns, its own as assistant messages"


async def test_bad_calls_become_tool_errors_and_too_many_end_the_episode_inside_the_tool_loop():
    bad = [{"name": "no_such_tool"}, {"name": "create_task", "arguments": {"wrong": 1}},
           {"name": "create_task", "arguments": "{not json"}]
    async with MockOpenAI(tool_script=[bad]) as mock:
        episode = episode_on(mock.base_url, prompt=TALKING_USER, max_errors=3)
        reason = await run_task(episode)
    messages = episode.transcript.messages
    assert reason is TerminationReason.TOO_MANY_ERRORS
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "tool", "tool"]
    unknown, wrong, not_json = messages[4:]
    assert [r.tool_result.call_id for r in messages[4:]] == [c.id for c in messages[3].tool_calls]
    assert all(r.tool_result.error for r in messages[4:]) and episode.desk.errors == 3
    fresh = episode_on(mock.base_url)
    assert wrong.speaker == "environment" and wrong.content == fresh.call_tool(messages[3].tool_calls[1]).content, \
        "τ²'s own error for arguments its tool refuses"
    assert unknown.speaker == not_json.speaker == FRAMEWORK_SPEAKER, "AgentChat answered these itself, as the model saw"
    assert "no_such_tool" in unknown.content and not_json.content.startswith("Error")
    assert len(episode.desk.environment.tools.db.tasks) == len(fresh.desk.environment.tools.db.tasks)
    assert len(mock.requests) == 3, "AgentChat finishes the assistant's turn: one model call after the limit, nothing recorded"



async def test_an_episode_with_a_call_agentchat_answered_itself_is_scored():
    d = domain("mock")
    async with MockOpenAI(tool_script=[[{"name": "no_such_tool"}]]) as mock:
        episode = episode_on(mock.base_url)
        reason = await run_task(episode)
    assert reason is TerminationReason.USER_STOP and episode.transcript.messages[4].speaker == FRAMEWORK_SPEAKER
    assert evaluate(d, d.tasks[TASK], episode.transcript.messages, reason).reward == 0.0

async def test_the_step_limit_ends_the_episode_between_turns_without_another_request():
    async with MockOpenAI() as mock:
        episode = episode_on(mock.base_url, prompt=TALKING_USER, max_steps=5)
        reason = await run_task(episode)
    assert reason is TerminationReason.MAX_STEPS
    assert [m.role for m in episode.transcript.messages] == ["system", "assistant"] + ["user", "assistant"] * 2 + ["user"]
    assert [m.content for m in episode.transcript.messages[2:]] == mock.replies and len(mock.requests) == 5


async def test_a_tool_asked_to_run_after_the_episode_stopped_is_refused():
    from testbed.frameworks.autogen_tools import EpisodeEnded, StreamRecorder
    from testbed.transcript import Message

    episode = episode_on("http://127.0.0.1:9/v1")
    stop = episode.record(Message("user", "Thanks ###STOP###", "simuser", episode.transcript.next_turn))
    assert stop is TerminationReason.USER_STOP
    recorder = StreamRecorder(episode, {})
    with pytest.raises(EpisodeEnded):
        await recorder.call_tool("call_after_the_end", "assistant")
    assert episode.desk.errors == 0 and episode.transcript.messages[-1].role == "user"


async def test_a_telecom_user_calls_its_own_tools_and_the_assistant_never_sees_them():
    d = domain("telecom")
    tool = next(t["function"]["name"] for t in d.user_tools if not t["function"]["parameters"].get("required"))
    prompt = STOPPING_USER.replace("SAY_MARKER_AT:3", "SAY_MARKER_AT:5")
    async with MockOpenAI(tool_script=[[{"name": tool}]]) as mock:
        episode = episode_on(mock.base_url, domain_name="telecom", task_id=next(iter(d.tasks)), prompt=prompt)
        reason = await run_task(episode)
    messages = episode.transcript.messages
    assert reason is TerminationReason.USER_STOP
    user_call = next(m for m in messages if m.role == "user" and m.tool_calls)
    result = messages[user_call.turn_index + 1]
    assert user_call.speaker == "simuser" and result.tool_result.requestor == "user" and not result.tool_result.error
    assert result.tool_result.call_id == user_call.tool_calls[0].id and result.speaker == "environment"
    user_requests = [r for r in mock.requests if r["messages"][0]["content"] == episode.user.prompt.rstrip()]
    assistant_requests = [r for r in mock.requests if r["messages"][0]["content"] == episode.system_prompt]
    assert [t["function"]["name"] for t in user_requests[0]["tools"]] == [t["function"]["name"] for t in d.user_tools]
    seen_result = user_requests[1]["messages"][-1]
    assert seen_result == {"role": "tool", "tool_call_id": result.tool_result.call_id, "content": result.content}
    assert assistant_requests and all(user_call.tool_calls[0].id not in json.dumps(r) for r in assistant_requests)


def tau2_scenario(folder: Path, base_url: str):
    """A τ² mock-domain scenario whose agents are the mock server as a vLLM backend with a base_url."""
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text(STOPPING_USER)
    write_yaml(folder / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": base_url})
    return load_scenario(write_yaml(folder / "t.yaml", {
        "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [TASK]}, "assistant": "mock.yaml", "user": "mock.yaml",
        "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32, "max_steps": 30}))


async def test_the_run_path_stores_the_autogen_episode_with_its_reward_and_wire_log(tmp_path, store):
    task = domain("mock").tasks[TASK]
    async with MockOpenAI(tool_script=script_of(expected_calls(task))) as mock:
        summary = await run_scenario(tau2_scenario(tmp_path, mock.base_url), store, framework="autogen", show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "user_stop" and episode.task_score == 1.0
    assert store.rewards(summary.run_id)[episode.key.episode_id].breakdown["DB"] == 1.0
    messages = store.messages(summary.run_id, episode.key.episode_id)
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    wire = store.wire(summary.run_id, episode.key.episode_id)
    assert [w.request for w in sorted(wire, key=lambda w: w.seq)] == mock.requests
    assert [w.role for w in sorted(wire, key=lambda w: w.seq)] == ["user", "assistant", "assistant", "user"]
    assert {w.turn_index for w in wire} == {2, 3, 5, 6}
