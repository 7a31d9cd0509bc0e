"""τ² tasks under LangGraph (testbed.frameworks.langgraph_tools) against the real mock server with scripted tool calls:
calls run in the episode's environment and score as under the native loop, bad calls are tool errors, the limits end
the graph, each side keeps its own view, and a run through the runner stores the episode with its reward and wire log."""

from __future__ import annotations

import json
from pathlib import Path

import mock_openai
import pytest
from conftest import backend_for
from mock_openai import MockOpenAI

from helpers import write_yaml
from testbed.backends.base import BackendError
from testbed.control_tokens import GENERIC
from testbed.frameworks import framework
from testbed.frameworks.tool_episode import ToolEpisode
from testbed.loop.orchestrator import TerminationReason
from testbed.loop.participants import TurnSampling
from testbed.specs.agent import AgentSpec, SamplingSpec
from testbed.specs.loader import ResolvedAgent, load_scenario

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")
pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

from testbed.running.runner import run_scenario  # noqa: E402
from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.episode import start_episode  # noqa: E402
from testbed.scenarios.tau2.evaluation import evaluate  # noqa: E402
from testbed.scenarios.tau2.oracle import expected_calls  # noqa: E402
from testbed.scenarios.tau2.participants import GoalUser, ToolAssistant  # noqa: E402
from testbed.scenarios.tau2.prompts import assistant_prompt, user_prompt  # noqa: E402

TASK = "create_task_1"
USER_PROMPT = "SAY_MARKER_AT:{k}:###STOP###\n\n{{guidelines}}\n\n<scenario>\n{{scenario}}\n</scenario>\n"
"""τ²'s user prompt with the mock's marker rule: the user stops once its view holds `k` messages besides the prompt."""


def expected_step(task_id: str = TASK) -> list[dict]:
    """The task's expected actions as one step of the mock's tool script."""
    return [{"name": c.name, "arguments": json.loads(c.arguments)} for c in expected_calls(domain("mock").tasks[task_id])]


def episode_on(base_url: str, domain_name: str = "mock", task_id: str = TASK, *, stop_at: int = 3, max_steps: int = 30,
               max_errors: int = 10) -> ToolEpisode:
    """A τ² episode as the tau2 kind builds it, both sides on the mock server."""
    d = domain(domain_name)
    task = d.tasks[task_id]
    backend = backend_for(base_url)
    a = ResolvedAgent(AgentSpec(name="agent", backend="vllm", model="mock", base_url=base_url,
                                sampling=SamplingSpec(temperature=0.0, max_tokens=64)), Path("agent.yaml"), None)
    u = ResolvedAgent(AgentSpec(name="simuser", backend="vllm", model="mock", base_url=base_url), Path("simuser.yaml"), None)
    assistant = ToolAssistant(a, backend, d.tools, GENERIC, TurnSampling(0.0, 64, 1.0, None, False))
    prompt = user_prompt(USER_PROMPT.format(k=stop_at), task, with_tools=bool(d.user_tools))
    user = GoalUser(u, backend, "instructed", prompt, d.user_tools, GENERIC, TurnSampling(0.5, 48, 1.0, 5, True))
    transcript, desk = start_episode(task, d.new_environment, assistant_prompt(d.policy), "agent")
    return ToolEpisode(transcript, assistant, user, desk, max_steps, max_errors)


async def run(name: str, script, **episode_options) -> tuple[ToolEpisode, TerminationReason, list[dict]]:
    """One episode of the framework `name` on a fresh mock server with `script`; the episode, its stop and the requests."""
    async with MockOpenAI(tool_script=script) as mock:
        episode = episode_on(mock.base_url, **episode_options)
        reason = await framework(name).run_task(episode)
    return episode, reason, mock.requests


def without_titles(schema):
    """A JSON schema without its `title` keywords (LangChain drops them from a tool's parameters; properties keep their names)."""
    if isinstance(schema, list):
        return [without_titles(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: without_titles(s) for name, s in value.items()}
        elif not (key == "title" and isinstance(value, str)):
            out[key] = without_titles(value)
    return out


def outline(tools: list[dict]) -> list[tuple]:
    """Each tool's name, description, parameter names and required ones (LangChain also inlines a schema's `$defs`)."""
    return [(f["name"], f["description"], list(f["parameters"]["properties"]), f["parameters"].get("required"))
            for f in (t["function"] for t in tools)]


async def test_the_expected_calls_run_in_the_environment_and_score_as_under_the_native_loop():
    task = domain("mock").tasks[TASK]
    episode, reason, _ = await run("langgraph", [expected_step()])
    native, native_reason, _ = await run("native", [expected_step()])
    assert reason is native_reason is TerminationReason.USER_STOP
    messages = episode.transcript.messages
    assert [m.role for m in messages] == [m.role for m in native.transcript.messages] == [
        "system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert [m.turn_index for m in messages] == list(range(len(messages)))
    calling, result = messages[3], messages[4]
    assert [(c.name, json.loads(c.arguments)) for c in calling.tool_calls] == [(c.name, json.loads(c.arguments))
                                                                           for c in expected_calls(task)]
    assert calling.finish_reason == "tool_calls" and calling.usage.completion_tokens > 0 and calling.usage.latency_s > 0
    assert calling.speaker == "agent" and calling.sampling == {"temperature": 0.0, "max_tokens": 64, "top_p": 1.0}
    assert result.tool_result.call_id == calling.tool_calls[0].id and result.tool_result.requestor == "assistant"
    assert not result.tool_result.error and result.content == native.transcript.messages[4].content
    title = json.loads(expected_calls(task)[0].arguments)["title"]
    assert title in {t.title for t in episode.desk.environment.tools.db.tasks.values()}
    assert title not in {t.title for t in domain("mock").new_environment().tools.db.tasks.values()}
    reward = evaluate(domain("mock"), task, messages, reason)
    assert reward.reward == evaluate(domain("mock"), task, native.transcript.messages, native_reason).reward == 1.0
    assert reward.breakdown["DB"] == 1.0


async def test_requests_carry_the_tool_schemas_and_tool_messages_as_langchain_sends_them():
    episode, _, requests = await run("langgraph", [expected_step()])
    messages = episode.transcript.messages
    tool_requests = [r for r in requests if r.get("tools")]
    assert len(tool_requests) == 2 and len(requests) == 4
    for r in tool_requests:
        assert r["tools"] == [without_titles(t) for t in domain("mock").tools], "τ²'s names, descriptions and parameters"
        assert "tool_choice" not in r and r["messages"][0] == {"role": "system", "content": episode.system_prompt}
    calling, result = messages[3], messages[4]
    call = calling.tool_calls[0]
    assert tool_requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": None,
         "tool_calls": [{"type": "function", "id": call.id, "function": {"name": call.name, "arguments": call.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": result.content}]
    for r in (r for r in requests if not r.get("tools")):
        assert all(m["role"] in ("system", "user", "assistant") and "tool_calls" not in m for m in r["messages"])
    assert requests[3]["messages"][-1] == {"role": "user", "content": messages[5].content}, "the user sees the reply role-flipped"


async def test_bad_arguments_and_unknown_tools_become_tool_errors_not_a_crash():
    step = [{"name": "create_task", "arguments": {"wrong": 1}}, {"name": "no_such_tool"},
            {"name": "create_task", "arguments": "{bad"}]
    episode, reason, requests = await run("langgraph", [step])
    native, _, _ = await run("native", [step])
    assert reason is TerminationReason.USER_STOP
    messages = episode.transcript.messages
    results = [m for m in messages if m.role == "tool"]
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "tool", "tool", "assistant", "user"]
    assert [r.tool_result.call_id for r in results] == [c.id for c in messages[3].tool_calls]
    assert [r.tool_result.error for r in results] == [True, True, True]
    assert [c.arguments for c in messages[3].tool_calls][1:] == ["{}", "{bad"]
    native_results = [m for m in native.transcript.messages if m.role == "tool"]
    assert results[0].content == native_results[0].content, "the arguments reach τ², whose own error comes back"
    assert "no_such_tool is not a valid tool" in results[1].content and results[1].content != native_results[1].content
    assert "are not valid JSON" in results[2].content
    assert episode.desk.errors == 3
    answered = [m for m in requests[2]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in answered] == [(r.tool_result.call_id, r.content) for r in results]


async def test_arguments_that_are_json_but_no_object_fail_langchains_reply_parsing_as_an_episode_error():
    async with MockOpenAI(tool_script=[[{"name": "create_task", "arguments": "[1]"}]]) as mock:
        episode = episode_on(mock.base_url)
        with pytest.raises(BackendError, match=r"^langgraph: ValidationError: .*tool_calls\.0\.args"):
            await framework("langgraph").run_task(episode)
    assert [m.role for m in episode.transcript.messages] == ["system", "assistant", "user"] and len(mock.requests) == 2


async def test_rejected_calls_count_toward_the_tool_error_limit():
    episode, reason, requests = await run("langgraph", [[{"name": "no_such_tool"}, {"name": "create_task", "arguments": "{bad"}]],
                                          max_errors=2)
    assert reason is TerminationReason.TOO_MANY_ERRORS
    assert [m.role for m in episode.transcript.messages][-3:] == ["assistant", "tool", "tool"]
    assert len(requests) == 2, "no request after the results that reached the limit"


async def test_the_step_limit_ends_the_episode_past_langgraphs_default_recursion_limit(monkeypatch):
    call = expected_step()[0]

    def always_calls(messages, script, serial):
        function = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
        return [{"id": f"call_{serial}", "type": "function", "function": function}]

    monkeypatch.setattr(mock_openai, "scripted_calls", always_calls)
    episode, reason, requests = await run("langgraph", [expected_step()], max_steps=40)
    assert reason is TerminationReason.MAX_STEPS
    messages = episode.transcript.messages
    assert episode.steps == 41 and messages[-1].role == "tool", "the limit is checked after the results of the last call"
    assert sum(m.role == "tool" for m in messages) == 20 and len(requests) == 21


async def test_a_task_history_with_tool_calls_is_the_graphs_starting_state():
    episode, reason, requests = await run("langgraph", [expected_step()], task_id="update_task_with_message_history")
    history = episode.transcript.messages[:5]
    (call,) = history[2].tool_calls
    first_assistant = next(r for r in requests if r.get("tools"))
    assert first_assistant["messages"][1:5] == [
        {"role": "user", "content": history[1].content},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "id": call.id,
             "function": {"name": call.name, "arguments": json.dumps(json.loads(call.arguments))}}]},
        {"role": "tool", "tool_call_id": call.id, "content": history[3].content},
        {"role": "assistant", "content": history[4].content}]
    assert [m["role"] for m in requests[0]["messages"]] == ["system", "assistant", "user"], "the user sees only the spoken turns"
    assert reason is TerminationReason.USER_STOP


async def test_a_telecom_user_calls_its_own_tools_which_the_assistant_neither_has_nor_sees():
    d = domain("telecom")
    tool = next(t["function"]["name"] for t in d.user_tools if not t["function"]["parameters"].get("required"))
    task_id = next(iter(d.tasks))
    episode, _, requests = await run("langgraph", [[{"name": tool}]], domain_name="telecom", task_id=task_id, stop_at=5)
    messages = episode.transcript.messages
    user_call = next(m for m in messages if m.role == "user" and m.tool_calls)
    result = messages[user_call.turn_index + 1]
    assert result.tool_result.requestor == "user" and not result.tool_result.error
    assert result.tool_result.call_id == user_call.tool_calls[0].id
    user_requests = [r for r in requests if r["messages"][0]["content"] == episode.user.prompt]
    assistant_requests = [r for r in requests if r["messages"][0]["content"] == episode.system_prompt]
    assert all(outline(r["tools"]) == outline(d.user_tools) for r in user_requests), "its phone's tools, not the assistant's"
    own_result = {"role": "tool", "tool_call_id": result.tool_result.call_id, "content": result.content}
    assert user_requests[1]["messages"][-1] == own_result
    assert [m["role"] for m in user_requests[1]["messages"][1:]] == ["user", "assistant", "tool"], "its own call as the model's"
    assert all(m.get("tool_call_id") != result.tool_result.call_id and result.content != m.get("content")
               for r in assistant_requests for m in r["messages"])
    assistant_call = next(m for m in messages if m.role == "assistant" and m.tool_calls)
    rejected = messages[assistant_call.turn_index + 1]
    assert rejected.tool_result.requestor == "assistant" and rejected.tool_result.error, "the phone's tools are not its own"


async def test_a_server_failure_is_a_backend_error_with_the_transcript_so_far(monkeypatch):
    real = mock_openai.reply_text

    def fail_after_the_results(messages, words, serial):
        if messages[-1]["role"] == "tool":
            raise RuntimeError("boom")
        return real(messages, words, serial)

    monkeypatch.setattr(mock_openai, "reply_text", fail_after_the_results)
    async with MockOpenAI(tool_script=[expected_step()]) as mock:
        episode = episode_on(mock.base_url)
        with pytest.raises(BackendError, match=r"^langgraph: .*Error code: 500") as failed:
            await framework("langgraph").run_task(episode)
    assert failed.value.__cause__ is not None
    assert [m.role for m in episode.transcript.messages] == ["system", "assistant", "user", "assistant", "tool"]


async def test_a_graph_that_ends_without_a_stop_is_a_backend_error(monkeypatch):
    import testbed.frameworks.langgraph_tools as langgraph_tools

    monkeypatch.setattr(langgraph_tools, "after_results", lambda episode, role: lambda state: langgraph_tools.END)
    async with MockOpenAI(tool_script=[expected_step()]) as mock:
        episode = episode_on(mock.base_url)
        with pytest.raises(BackendError, match="ended without a stop"):
            await framework("langgraph").run_task(episode)
    assert episode.stopped is None and episode.transcript.messages[-1].role == "tool"


async def test_a_tau2_scenario_runs_under_langgraph_and_stores_the_episode_with_its_reward_and_wire_log(tmp_path, store):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text(USER_PROMPT.format(k=3))
    async with MockOpenAI(tool_script=[expected_step()]) as mock:
        write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": mock.base_url})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [TASK]}, "assistant": "mock.yaml",
            "user": "mock.yaml", "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32,
            "max_steps": 30}))
        summary = await run_scenario(scenario, store, show_progress=False, framework="langgraph")
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "user_stop" and episode.task_score == 1.0
    assert store.rewards(summary.run_id)[episode.episode_id].breakdown["DB"] == 1.0
    messages = store.messages(summary.run_id, episode.episode_id)
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    records = store.wire(summary.run_id, episode.episode_id)
    assert len(records) == len(mock.requests) == 4 and all(r.status == 200 and r.answered for r in records)
    (calling,) = [r for r in records if r.response["choices"][0]["message"].get("tool_calls")]
    assert calling.request["tools"] == [without_titles(t) for t in domain("mock").tools]
    assert calling.turn_index == messages[3].turn_index
