"""τ²'s own orchestrator as a framework, on a real OpenAI-compatible mock: τ²'s evaluator on its SimulationRun and the testbed's
on the recorded transcript agree, the episode's environment is the one changed (its initial state applied once), the
requests are τ²'s loop's, a run stores the episode with its reward and wire log, and a dead server is an episode error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from conftest import MockOpenAI, backend_for  # noqa: E402

from helpers import REPO, write_yaml  # noqa: E402
from testbed.backends.base import BackendError  # noqa: E402
from testbed.control_tokens import GENERIC  # noqa: E402
from testbed.frameworks import framework  # noqa: E402
from testbed.scenarios.tau2.reference_loop import orchestrate  # noqa: E402
from testbed.frameworks.tool_episode import ToolEpisode  # noqa: E402
from testbed.loop.orchestrator import Limits, TerminationReason  # noqa: E402
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
from testbed.transcript import ToolCall  # noqa: E402

DEFAULT_TEMPLATE = (REPO / "scenarios/prompts/user-tau2.md").read_text()
ASSISTANT_SEED, USER_SEED = 7, 11
CROSS_CHECKED = ("create_task_1", "update_task_with_message_history", "update_task_with_initialization_actions",
                 "update_task_with_initialization_data", "impossible_task_1")
"""Mock tasks with a greeting or a message history, initialisation data or actions, and DB, ACTION or COMMUNICATE criteria."""


def history_calls(task) -> list[list[dict]]:
    """The tool calls of the task's message history, one step each: the mock counts a conversation's tool-call messages
    to choose its next step, so a script for a task with a history starts with the history's own."""
    history = (task.initial_state.message_history or []) if task.initial_state is not None else []
    return [[{"name": c.name, "arguments": c.arguments} for c in m.tool_calls] for m in history if getattr(m, "tool_calls", None)]


def script_for(task, calls: list[ToolCall]) -> list[list[dict]]:
    """The mock's tool script: the history's steps, then one step per call."""
    return history_calls(task) + [[{"name": c.name, "arguments": json.loads(c.arguments)}] for c in calls]


def agent(name: str, base_url: str) -> ResolvedAgent:
    return ResolvedAgent(AgentSpec(name=name, backend="vllm", model="mock", base_url=base_url), Path(f"{name}.yaml"), None)


def mock_episode(base_url: str, task, calls: int | None = None, *, template: str | None = None, max_steps: int = 40,
                 max_errors: int = 10) -> ToolEpisode:
    """A τ² episode of a mock task on the server, built as the kind builds one; its user says ###STOP### once the assistant
    has answered `calls` user turns with calls and one more with text (by the mock's SAY_MARKER_AT rule)."""
    d = domain("mock")
    transcript, desk = start_episode(task, d.new_environment, assistant_prompt(d.policy), "helper")
    backend = backend_for(base_url)
    if template is None:
        stop_at = len(transcript.dialogue()) + 2 * (len(expected_calls(task)) if calls is None else calls)
        template = f"SAY_MARKER_AT:{stop_at}:###STOP###\n\n{DEFAULT_TEMPLATE}"
    assistant = ToolAssistant(agent("helper", base_url), backend, d.tools, GENERIC, TurnSampling(0.0, 64, 1.0, ASSISTANT_SEED))
    user = GoalUser(agent("simuser", base_url), backend, "instructed", user_prompt(template, task, with_tools=False), d.user_tools,
                    GENERIC, TurnSampling(0.5, 48, 1.0, USER_SEED, True))
    return ToolEpisode(transcript, assistant, user, desk, max_steps, max_errors)


def tau2_reward(simulation, task):
    """τ²'s own scoring of its SimulationRun, as `tau2 run` scores it (on the testbed's registered environments)."""
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    info = evaluate_simulation(simulation, task, EvaluationType.ALL, solo_mode=False, domain=domain("mock").evaluation_name)
    return info.reward, {k.value: v for k, v in (info.reward_breakdown or {}).items()}


def wrong(calls: list[ToolCall]) -> list[ToolCall]:
    """The first call with every string argument changed."""
    arguments = {k: (f"{v}-wrong" if isinstance(v, str) else v) for k, v in json.loads(calls[0].arguments).items()}
    return [ToolCall("w", calls[0].name, json.dumps(arguments)), *calls[1:]]


async def test_tau2s_own_reward_and_the_testbeds_agree_on_the_same_trajectories():
    d = domain("mock")
    runs = [(task_id, expected_calls(d.tasks[task_id])) for task_id in CROSS_CHECKED]
    runs.append(("create_task_1", wrong(expected_calls(d.tasks["create_task_1"]))))
    rewards = []
    for task_id, calls in runs:
        task = d.tasks[task_id]
        async with MockOpenAI(tool_script=script_for(task, calls)) as mock:
            episode = mock_episode(mock.base_url, task, len(calls))
            termination, simulation = await orchestrate(episode)
        assert termination == "user_stop" and simulation.termination_reason.value == "user_stop", task_id
        made = [c["function"]["name"] for c in mock.calls]
        assert made == [c.name for c in calls], (task_id, "every scripted call reached τ²'s environment")
        assert [m.role for m in simulation.messages] == [m.role for m in episode.transcript.messages[1:]], task_id
        ours = evaluate(d, task, episode.transcript.messages, termination)
        theirs = tau2_reward(simulation, task)
        assert (ours.reward, ours.breakdown) == theirs, task_id
        rewards.append(ours.reward)
    assert 1.0 in rewards and 0.0 in rewards and rewards[-1] == 0.0, rewards


async def test_the_episodes_environment_is_the_one_changed_with_its_initial_state_applied_once():
    d = domain("mock")
    task = d.tasks["update_task_with_initialization_actions"]
    calls = expected_calls(task)
    async with MockOpenAI(tool_script=script_for(task, calls)) as mock:
        episode = mock_episode(mock.base_url, task)
        await orchestrate(episode)

    def with_initial_state(times: int):
        env = d.new_environment()
        for _ in range(times):
            state = task.initial_state
            env.set_state(initialization_data=state.initialization_data, initialization_actions=state.initialization_actions,
                          message_history=[])
        return env

    gold, twice = with_initial_state(1), with_initial_state(2)
    assert gold.get_db_hash() != twice.get_db_hash(), "applying this task's initial state twice changes the database"
    assert episode.desk.environment.get_db_hash() != gold.get_db_hash(), "the episode's environment took the calls"
    from tau2.data_model.message import ToolCall as Tau2Call

    for c in calls:
        gold.get_response(Tau2Call(id=c.id, name=c.name, arguments=json.loads(c.arguments), requestor="assistant"))
    assert episode.desk.environment.get_db_hash() == gold.get_db_hash()


async def test_the_requests_are_tau2s_loop_with_the_episodes_prompts_and_sampling():
    d = domain("mock")
    task = d.tasks["create_task_1"]
    async with MockOpenAI(tool_script=script_for(task, expected_calls(task))) as mock:
        episode = mock_episode(mock.base_url, task)
        await orchestrate(episode)
    assistant_requests = [r for r in mock.requests if r["messages"][0]["content"] == episode.system_prompt]
    user_requests = [r for r in mock.requests if r["messages"][0]["content"] == episode.user.prompt]
    assert len(assistant_requests) + len(user_requests) == len(mock.requests) == 4
    for r in assistant_requests:
        assert r["tools"] == d.tools and r["tool_choice"] == "auto"
        assert (r["temperature"], r["max_tokens"], r["top_p"], r["seed"]) == (0.0, 64, 1.0, ASSISTANT_SEED)
    messages = episode.transcript.messages
    call, result = messages[3], messages[4]
    assert assistant_requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": call.tool_calls[0].id, "content": result.content}
    assert assistant_requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == call.tool_calls[0].name
    for r in user_requests:
        assert "tools" not in r and r["seed"] == USER_SEED and r["temperature"] == 0.5
        assert [m["role"] for m in r["messages"][1:]] == ["user", "assistant", "user"][: len(r["messages"]) - 1]
    assert user_requests[1]["messages"][-1]["content"] == messages[5].content, "the assistant's words reach the user role-flipped"
    assert [m.speaker for m in messages[2:]] == ["simuser", "helper", "environment", "helper", "simuser"]
    assert messages[2].usage.completion_tokens == 8 and messages[2].sampling["seed"] == USER_SEED and messages[2].finish_reason == "stop"


@pytest.mark.parametrize("limit", ["max_steps", "too_many_errors"])
async def test_tau2s_limits_end_the_episode_where_the_episodes_step_rules_do(limit):
    task = domain("mock").tasks["create_task_1"]
    unknown = [[{"name": "no_such_tool", "arguments": {}}], [{"name": "no_such_tool", "arguments": {}}]]
    async with MockOpenAI(tool_script=unknown) as mock:
        episode = mock_episode(mock.base_url, task, template=DEFAULT_TEMPLATE, max_steps=5 if limit == "max_steps" else 40,
                               max_errors=2)
        termination, simulation = await orchestrate(episode)
    assert termination == limit and simulation.termination_reason.value == limit
    assert episode.steps == simulation.messages[-1].turn_idx == len(simulation.messages) - 1
    results = [m for m in episode.transcript.messages if m.role == "tool"]
    assert episode.desk.errors == len(results) == (1 if limit == "max_steps" else 2) and all(r.tool_result.error for r in results)
    assert evaluate(domain("mock"), task, episode.transcript.messages, termination).reward == 0.0 == tau2_reward(simulation, task)[0]


async def test_a_telecom_user_calls_its_phone_through_tau2s_user_simulator():
    d = domain("telecom")
    task = d.tasks[d.task_ids("small")[0]]
    tool = next(t["function"]["name"] for t in d.user_tools if not t["function"]["parameters"].get("required"))
    async with MockOpenAI(tool_script=[[{"name": tool, "arguments": {}}]]) as mock:
        transcript, desk = start_episode(task, d.new_environment, assistant_prompt(d.policy), "helper")
        backend = backend_for(mock.base_url)
        assistant = ToolAssistant(agent("helper", mock.base_url), backend, d.tools, GENERIC, TurnSampling(0.0, 64, 1.0, ASSISTANT_SEED))
        prompt = user_prompt(f"SAY_MARKER_AT:5:###STOP###\n\n{DEFAULT_TEMPLATE}", task, with_tools=True)
        user = GoalUser(agent("simuser", mock.base_url), backend, "instructed", prompt, d.user_tools, GENERIC,
                        TurnSampling(0.5, 48, 1.0, USER_SEED, True))
        episode = ToolEpisode(transcript, assistant, user, desk, 40, 10)
        termination, _ = await orchestrate(episode)
    assert termination == "user_stop"
    messages = episode.transcript.messages
    assert (messages[2].role, messages[2].tool_calls[0].name) == ("user", tool)
    assert messages[3].tool_result.requestor == "user" and not messages[3].tool_result.error
    user_requests = [r for r in mock.requests if r["messages"][0]["content"] == prompt]
    assert all(r["tools"] == d.user_tools for r in user_requests) and user_requests[1]["messages"][-1]["role"] == "tool"
    assistant_requests = [r for r in mock.requests if r["messages"][0]["content"] == episode.system_prompt]
    assert all(m["role"] != "tool" and not m.get("tool_calls") for m in assistant_requests[0]["messages"])


def test_tau2s_termination_is_the_episodes_or_an_error_saying_where_they_differ():
    from testbed.scenarios.tau2.reference_records import termination_of

    episode = mock_episode("http://127.0.0.1:9/v1", domain("mock").tasks["create_task_1"], template=DEFAULT_TEMPLATE)
    episode.stopped = TerminationReason.TRANSFER
    assert termination_of(episode, "user_stop") is TerminationReason.TRANSFER, "τ²'s user stop covers ###TRANSFER###"
    with pytest.raises(BackendError, match="ended the episode with user_error"):
        termination_of(episode, "user_error")
    episode.stopped = TerminationReason.AGENT_STOP
    with pytest.raises(BackendError, match="ended on user_stop where the episode's step rules ended on agent_stop"):
        termination_of(episode, "user_stop")


def test_the_default_user_prompt_is_tau2s_own_user_simulator_prompt():
    from tau2.user.user_simulator import UserSimulator

    task = domain("mock").tasks["create_task_1"]
    ours = user_prompt(DEFAULT_TEMPLATE, task, with_tools=False)
    assert ours.removesuffix("\n") == UserSimulator(instructions=str(task.user_scenario)).system_prompt, "the file's final newline aside"


async def test_a_run_stores_the_episode_with_its_reward_and_the_wire_log(tmp_path, store):
    task = domain("mock").tasks["create_task_1"]
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text(f"SAY_MARKER_AT:3:###STOP###\n\n{DEFAULT_TEMPLATE}")
    async with MockOpenAI(tool_script=script_for(task, expected_calls(task))) as mock:
        write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": mock.base_url})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [task.id]}, "assistant": "mock.yaml", "user": "mock.yaml",
            "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32, "max_steps": 30}))
        summary = await run_scenario(scenario, store, show_progress=False, framework="tau2")
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "user_stop" and episode.task_score == 1.0
    assert store.rewards(summary.run_id)[episode.episode_id].breakdown == {"DB": 1.0, "COMMUNICATE": 1.0}
    messages = store.messages(summary.run_id, episode.episode_id)
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    records = store.wire(summary.run_id, episode.episode_id)
    assert len(records) == len(mock.requests) == 4 and all(r.status == 200 and r.answered for r in records)
    assert [r.request["messages"] for r in records] == [r["messages"] for r in mock.requests]
    assert next(r for r in records if r.request.get("tools")).request["tools"] == domain("mock").tools


async def test_a_dead_server_is_the_episodes_error_with_its_reason_and_the_opening_kept():
    async with MockOpenAI() as mock:
        base_url = mock.base_url
    episode = mock_episode(base_url, domain("mock").tasks["create_task_1"], template=DEFAULT_TEMPLATE)
    with pytest.raises(BackendError, match=r"^tau2: .*Connection") as raised:
        await framework("tau2").run_task(episode)
    assert "Traceback" not in raised.value.reason
    assert [m.role for m in episode.transcript.messages] == ["system", "assistant"]


async def test_a_dialogue_is_refused():
    with pytest.raises(BackendError, match="runs only τ² tasks"):
        await framework("tau2").converse(None, None, None, Limits(max_user_turns=1))
