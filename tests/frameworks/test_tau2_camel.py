"""CAMEL running τ² tasks (testbed.frameworks.camel_tools) on the mock server with scripted tool calls: calls run in the
episode's environment and are recorded in order, tied to their results; τ² scores them as it scores native's; bad calls
are tool errors; τ²'s limits end the episode inside a CAMEL step; requests carry the tools and tool messages CAMEL sends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from conftest import MockOpenAI, backend_for  # noqa: E402
from helpers import write_yaml  # noqa: E402

from testbed.backends.base import BackendError  # noqa: E402
from testbed.control_tokens import GENERIC  # noqa: E402
from testbed.frameworks import framework  # noqa: E402
from testbed.frameworks.camel_tools import CAMEL_SPEAKER  # noqa: E402
from testbed.frameworks.tool_episode import ToolEpisode  # noqa: E402
from testbed.loop.orchestrator import TerminationReason  # noqa: E402
from testbed.loop.participants import TurnSampling  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.episode import start_episode  # noqa: E402
from testbed.scenarios.tau2.evaluation import evaluate  # noqa: E402
from testbed.scenarios.tau2.oracle import expected_calls  # noqa: E402
from testbed.scenarios.tau2.participants import GoalUser, ToolAssistant  # noqa: E402
from testbed.scenarios.tau2.prompts import assistant_prompt, user_prompt  # noqa: E402
from testbed.specs.agent import AgentSpec  # noqa: E402
from testbed.specs.loader import ResolvedAgent, load_scenario  # noqa: E402

TASK = "create_task_1"
USER_TEMPLATE = "SAY_MARKER_AT:{k}:###STOP###\n\n{{guidelines}}\n\n<scenario>\n{{scenario}}\n</scenario>\n"
"""τ²'s user prompt with the mock's marker rule: the user stops once its request holds k messages besides the system's."""


def agent(name: str, base_url: str) -> ResolvedAgent:
    return ResolvedAgent(AgentSpec(name=name, backend="vllm", model="mock", base_url=base_url), Path(f"{name}.yaml"), None)


def episode_on(base_url: str, task_id: str = TASK, *, domain_name: str = "mock", max_steps: int = 30, max_errors: int = 10,
               stop_at: int = 3) -> ToolEpisode:
    """A τ² episode as the kind builds one, both sides on the mock server."""
    d = domain(domain_name)
    task = d.tasks[task_id]
    backend = backend_for(base_url)
    assistant = ToolAssistant(agent("helper", base_url), backend, d.tools, GENERIC, TurnSampling(0.0, 32, 1.0, 7, False))
    prompt = user_prompt(USER_TEMPLATE.format(k=stop_at), task, with_tools=bool(d.user_tools))
    user = GoalUser(agent("simuser", base_url), backend, "instructed", prompt, d.user_tools, GENERIC,
                    TurnSampling(0.0, 32, 1.0, 7, True))
    transcript, desk = start_episode(task, d.new_environment, assistant_prompt(d.policy), "helper")
    return ToolEpisode(transcript, assistant, user, desk, max_steps, max_errors)


def script_of(task_id: str = TASK) -> list[list[dict]]:
    """One step making the task's expected calls, read from the installed τ² package."""
    return [[{"name": c.name, "arguments": json.loads(c.arguments)} for c in expected_calls(domain("mock").tasks[task_id])]]


async def run(framework_name: str, script, **episode_args) -> tuple[ToolEpisode, TerminationReason, MockOpenAI]:
    async with MockOpenAI(tool_script=script) as mock:
        episode = episode_on(mock.base_url, **episode_args)
        reason = await framework(framework_name).run_task(episode)
    return episode, reason, mock


def roles(episode: ToolEpisode) -> list[str]:
    return [m.role for m in episode.transcript.messages]


async def test_the_expected_calls_change_the_environment_and_score_as_native_does():
    task = domain("mock").tasks[TASK]
    (expected,) = expected_calls(task)
    episode, reason, _ = await run("camel", script_of())
    assert reason is TerminationReason.USER_STOP
    assert roles(episode) == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    calling, result = episode.transcript.messages[3:5]
    (call,) = calling.tool_calls
    assert (call.name, json.loads(call.arguments)) == (expected.name, json.loads(expected.arguments))
    assert result.tool_result.call_id == call.id and result.tool_result.requestor == "assistant" and not result.tool_result.error
    created = json.loads(result.content)
    assert created["title"] == json.loads(expected.arguments)["title"]
    assert created["task_id"] in episode.desk.environment.tools.db.tasks, "the call ran against the episode's environment"
    assert calling.usage.completion_tokens > 0 and calling.finish_reason is None
    assert episode.transcript.messages[5].finish_reason == "stop"

    native, native_reason, _ = await run("native", script_of())
    assert roles(native) == roles(episode) and native_reason is reason
    camel_reward = evaluate(domain("mock"), task, episode.transcript.messages, reason)
    native_reward = evaluate(domain("mock"), task, native.transcript.messages, native_reason)
    assert camel_reward.reward == native_reward.reward == 1.0 and camel_reward.breakdown == native_reward.breakdown


async def test_requests_carry_the_tool_schemas_and_tool_messages_as_camel_sends_them():
    episode, _, mock = await run("camel", script_of())
    calling, result = episode.transcript.messages[3:5]
    assistant_requests = [r for r in mock.requests if r.get("tools")]
    assert len(assistant_requests) == 2 and all(r["tools"] == domain("mock").tools for r in assistant_requests)
    assert "tool_choice" not in assistant_requests[0], "CAMEL leaves the choice to the server's default"
    (call,) = calling.tool_calls
    assert assistant_requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": "", "tool_calls": [call.as_chat()]},
        {"role": "tool", "content": result.content, "tool_call_id": call.id}]
    user_requests = [r for r in mock.requests if not r.get("tools")]
    assert len(user_requests) == 2
    assert all(m["role"] != "tool" and "tool_calls" not in m for r in user_requests for m in r["messages"])


async def test_bad_arguments_get_tau2s_error_and_an_unknown_tool_camels_and_the_episode_goes_on():
    script = [[{"name": "create_task", "arguments": {"wrong": 1}}, {"name": "no_such_tool", "arguments": {}}]]
    episode, reason, _ = await run("camel", script)
    assert reason is TerminationReason.USER_STOP
    calling, bad, unknown = episode.transcript.messages[3:6]
    assert [r.tool_result.call_id for r in (bad, unknown)] == [c.id for c in calling.tool_calls]
    assert bad.tool_result.error and bad.speaker == "environment" and bad.content.startswith("Error")
    assert unknown.tool_result.error and unknown.speaker == CAMEL_SPEAKER and "no_such_tool" in unknown.content
    assert episode.desk.errors == 2, "CAMEL's own answer counts towards τ²'s error limit"
    assert roles(episode)[6:] == ["assistant", "user"]


@pytest.mark.parametrize("arguments, raised", [("{not json", "JSONDecodeError"), ("[1, 2]", "ValidationError")])
async def test_arguments_that_are_not_a_json_object_make_the_episode_an_error_with_camels_reason(arguments, raised):
    with pytest.raises(BackendError, match=f"camel: {raised}"):
        await run("camel", [[{"name": "create_task", "arguments": arguments}]])


async def test_the_step_limit_inside_a_camel_step_ends_the_episode_and_nothing_more_is_requested():
    episode, reason, mock = await run("camel", script_of(), max_steps=3)
    assert reason is TerminationReason.MAX_STEPS
    assert roles(episode) == ["system", "assistant", "user", "assistant", "tool"]
    assert len(mock.requests) == 2, "CAMEL's loop stops with the results that reach the limit, before answering them"


async def test_the_error_limit_inside_a_camel_step_ends_it_after_the_batch():
    script = [[{"name": "create_task", "arguments": {"wrong": 1}}, {"name": "create_task", "arguments": {"other": 2}}]]
    episode, reason, mock = await run("camel", script, max_errors=2)
    assert reason is TerminationReason.TOO_MANY_ERRORS
    assert roles(episode)[3:] == ["assistant", "tool", "tool"] and len(mock.requests) == 2


async def test_a_tasks_history_is_in_the_assistants_memory_with_its_tool_traffic_and_the_user_sees_only_turns():
    task_id = "update_task_with_message_history"
    opening, _ = start_episode(domain("mock").tasks[task_id], domain("mock").new_environment, "policy", "helper")
    history = opening.messages[1:]
    history_made_step_0 = [[{"name": "never_sent"}]]
    episode, reason, mock = await run("camel", history_made_step_0 + script_of(task_id), task_id=task_id)
    assert reason is TerminationReason.USER_STOP
    first_user, first_assistant = mock.requests[0], mock.requests[1]
    assert first_assistant["messages"][1:-1] == [{**m.as_chat(), "content": m.content} for m in history], \
        "its own tool call and result in their OpenAI form (CAMEL sends a call's empty text as '', not null)"
    assert first_user["messages"][1:] == [{"role": "assistant" if m.role == "user" else "user", "content": m.content}
                                          for m in history if m.spoken]
    reward = evaluate(domain("mock"), domain("mock").tasks[task_id], episode.transcript.messages, reason)
    assert reward.breakdown["DB"] == 1.0


async def test_a_telecom_user_calls_its_own_tools_which_the_assistant_never_sees():
    d = domain("telecom")
    task_id = next(iter(d.tasks))
    tool = next(t["function"]["name"] for t in d.user_tools if not t["function"]["parameters"].get("required"))
    episode, reason, mock = await run("camel", [[{"name": tool, "arguments": {}}]], domain_name="telecom", task_id=task_id,
                                      stop_at=5)
    assert reason is TerminationReason.USER_STOP
    messages = episode.transcript.messages
    calling, result = messages[2:4]
    assert calling.role == "user" and calling.tool_calls[0].name == tool
    assert result.tool_result.requestor == "user" and result.speaker == "environment"
    assert mock.requests[0]["tools"] == d.user_tools
    assistant_requests = [r for r in mock.requests if r.get("tools") == d.tools]
    user_call = calling.tool_calls[0].id
    seen = [m for r in assistant_requests for m in r["messages"]
            if m.get("tool_call_id") == user_call or any(c["id"] == user_call for c in m.get("tool_calls") or ())]
    assert assistant_requests and not seen, "the assistant's requests never hold the user's tool call or its result"
    rejected = next(m for m in messages if m.tool_result is not None and m.tool_result.requestor == "assistant")
    assert rejected.speaker == CAMEL_SPEAKER, "the user's tool is not the assistant's: CAMEL answers the call itself"


async def test_run_scenario_with_camel_stores_the_episode_with_its_reward_and_the_wire_log(tmp_path, store):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text(USER_TEMPLATE.format(k=3))
    async with MockOpenAI(tool_script=script_of()) as mock:
        write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": mock.base_url})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [TASK]}, "assistant": "mock.yaml",
            "user": "mock.yaml", "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32,
            "max_steps": 30}))
        summary = await run_scenario(scenario, store, show_progress=False, framework="camel")
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "user_stop" and episode.task_score == 1.0
    assert store.rewards(summary.run_id)[episode.episode_id].breakdown["DB"] == 1.0
    messages = store.messages(summary.run_id, episode.episode_id)
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    records = store.wire(summary.run_id, episode.episode_id)
    assert len(records) == len(mock.requests) == 4 and all(r.status == 200 for r in records)
    assert [r.request["messages"] for r in records] == [r["messages"] for r in mock.requests]
    (calling,) = [r for r in records if r.response["choices"][0]["message"].get("tool_calls")]
    assert calling.request["tools"] == domain("mock").tools
