"""Every message shape a τ² episode can take, through the native loop and every framework, scored as τ² scores it.

Each shape is a script: what the assistant and the user say, turn by turn (text, tool calls, both, calls
without ids, stop signals). A real server on 127.0.0.1 plays it (tau2_script_server) while the testbed
runs the scenario under one framework into a store; then the stored termination, reward and breakdown
are held to τ²'s own verdicts (tau2_rescoring): the stored rows rebuilt with τ²'s message classes and
scored by `evaluate_simulation`, and the same script played by τ²'s own `Orchestrator`. Where τ²'s
evaluator raises, the episode is an error beside its true termination.

τ²'s reference loop (framework `tau2`) runs τ²'s LLMAgent, which never stops on the assistant's
`###STOP###` (its `is_stop` is False; only its solo agent stops): in the shapes that need that stop its
episode is an error saying where the two loops parted, never a reward.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass

import pytest

from helpers import write_yaml
from tau2_rescoring import orchestrated, rescored
from tau2_script_server import Call, Reply, ScriptServer, call, say

from testbed.running.runner import run_scenario
from testbed.scenarios.tau2.domains import domain

NEEDS = {"autogen": "autogen_agentchat", "langgraph": "langgraph", "camel": "camel", "tau2": "litellm"}
"""The package each framework runs on; a framework whose package is missing is skipped, the others still run."""
FRAMEWORKS = [pytest.param(name, marks=pytest.mark.skipif(name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None,
                                                          reason=f"{NEEDS.get(name)} is not installed"))
              for name in ("native", "autogen", "langgraph", "camel", "tau2")]
MEETING = {"user_id": "user_1", "title": "Important Meeting"}
"""create_task_1's expected action's arguments."""
DONE = {"task_id": "task_2", "status": "completed"}
"""The expected action's arguments of the mock tasks that update task_2."""


@dataclass(frozen=True)
class Shape:
    """One script and where it runs: the domain and task, each side's replies, the episode's limits."""

    task: str
    assistant: list[Reply]
    user: list[Reply]
    domain: str = "mock"
    max_steps: int = 20
    max_errors: int = 10
    agent_stops: bool = False
    """Whether the episode ends on the assistant's `###STOP###`, which τ²'s LLMAgent never sends as a stop."""

    @property
    def script(self) -> dict[str, list[Reply]]:
        """Each side's replies, as the server and τ²'s scripted agent and user play them."""
        return {"assistant": self.assistant, "user": self.user}


def info(task_id: str) -> str:
    """Everything the task expects the assistant to tell the user (τ²'s communicate check)."""
    return " ".join(map(str, domain("mock").tasks[task_id].evaluation_criteria.communicate_info))


def expected(domain_name: str, task_id: str) -> list:
    """The task's expected actions (τ²'s own, in order)."""
    return list(domain(domain_name).tasks[task_id].evaluation_criteria.actions)


SHAPES = {
    "several_calls_in_one_message": Shape("create_task_1", [
        Reply(None, (Call("get_users", {}), Call("create_task", MEETING))), say("Your task is created.")],
        [say("Please create my meeting task."), say("Thanks. ###STOP###")]),
    "calls_without_ids": Shape("create_task_1", [
        Reply(None, (Call("get_users", {}, None), Call("create_task", MEETING, None))), call("get_users", call_id=None),
        say("Your task is created.")],
        [say("Please create my meeting task."), say("Thanks. ###STOP###")]),
    "text_beside_a_call": Shape("update_task_with_initialization_data", [
        call("update_task_status", DONE, text=info("update_task_with_initialization_data")), say("Anything else?")],
        [say("Please complete task_2."), say("No, thanks. ###STOP###")]),
    "required_information_said_with_the_stop": Shape("update_task_with_initialization_data", [
        call("update_task_status", DONE), say(f"{info('update_task_with_initialization_data')} ###STOP###")],
        [say("Please complete task_2.")], agent_stops=True),
    "wrong_arguments_then_user_stop": Shape("create_task_1", [
        call("create_task", {"user_id": "user_1", "title": "Unimportant Meeting"}), say("Done.")],
        [say("Please create my meeting task."), say("Thanks. ###STOP###")]),
    "a_task_history_with_calls": Shape("update_task_with_message_history", [
        call("update_task_status", DONE), say("Task task_2 is completed.")],
        [say("Now mark it completed, please."), say("###STOP###")]),
    "transfer": Shape("impossible_task_1", [
        call("transfer_to_human_agents", domain("mock").tasks["impossible_task_1"].evaluation_criteria.actions[0].arguments),
        say("You are being transferred to a human agent.")],
        [say("Delete all my tasks, please."), say("###TRANSFER###")]),
    "out_of_scope": Shape("impossible_task_1", [say("I cannot delete tasks.")],
                          [say("Delete all my tasks, please."), say("Fine. ###OUT-OF-SCOPE###")]),
    "telecom_user_tools": Shape("[mobile_data_issue]data_mode_off[PERSONA:None]", [
        say("Please turn your mobile data on."), say("Good, anything else?")],
        [say("My mobile data does not work."), call("toggle_data"), say("It works now."), say("###STOP###")],
        domain="telecom"),
    "telecom_user_text_beside_its_call": Shape("[mobile_data_issue]data_mode_off[PERSONA:None]", [
        say("Please turn your mobile data on."), say("Good, anything else?")],
        [say("My mobile data does not work."), call("toggle_data", text="Turning it on now."), say("Fixed. ###STOP###")],
        domain="telecom"),
    "retail_every_expected_call_in_one_message_with_text": Shape("2", [
        Reply("Your refund of 10 dollars is on its way.", tuple(Call(a.name, a.arguments) for a in expected("retail", "2"))),
        say("Anything else?")], [say("I want to return some items."), say("No, thanks. ###STOP###")], domain="retail"),
    "assistant_stop_on_the_last_step": Shape("create_task_1", [
        say("Could you say more?"), say("Done. ###STOP###")], [say("Hi."), say("More.")], max_steps=4),
    "user_stop_on_the_last_step": Shape("create_task_1", [say("Could you say more?")],
                                        [say("Hi."), say("Bye. ###STOP###")], max_steps=3),
    "an_evaluation_that_raises": Shape("create_task_1_with_env_assertions", [say("I can't help with that.")],
                                       [say("Create my meeting task."), say("Bye. ###STOP###")]),
    "max_errors": Shape("create_task_1", [call("create_task", {"wrong": 1})], [say("Please create my meeting task.")],
                        max_errors=2),
    "max_errors_in_one_batch": Shape("create_task_1", [Reply(None, tuple(Call("create_task", {"wrong": i}) for i in range(3)))],
                                     [say("Please create my meeting task.")], max_errors=2),
    "both_limits_at_once": Shape("create_task_1", [call("create_task", {"wrong": 1})], [say("Please create my meeting task.")],
                                 max_steps=3, max_errors=1),
    "an_unknown_tool_then_user_stop": Shape("create_task_1", [
        call("delete_everything"), call("create_task", MEETING), say("Your task is created.")],
        [say("Please create my meeting task."), say("Thanks. ###STOP###")]),
    "max_steps_in_a_tool_loop": Shape("create_task_1", [call("get_users")], [say("Please create my meeting task.")],
                                      max_steps=7),
}


@functools.cache
def reference_of(name: str):
    """τ²'s own Orchestrator's verdict on the shape's script (the same for every framework, so played once)."""
    shape = SHAPES[name]
    return orchestrated(domain(shape.domain).tasks[shape.task], shape.domain, shape.script, shape.max_steps, shape.max_errors)


async def run_shape(tmp_path, store, shape: Shape, framework: str):
    """The shape's episode run under `framework` against its script; the stored episode, its run id and the server."""
    from helpers import REPO

    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    async with ScriptServer(shape.script) as server:
        for side in ("assistant", "user"):
            write_yaml(tmp_path / f"{side}.yaml", {"name": side, "backend": "vllm", "model": side, "base_url": server.base_url,
                                                  "max_retries": 0})
        from testbed.specs.loader import load_scenario

        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": shape.domain, "tasks": {"ids": [shape.task]}, "assistant": "assistant.yaml",
            "user": "user.yaml", "temperatures": [0.0], "max_tokens": 32, "max_steps": shape.max_steps,
            "max_errors": shape.max_errors}))
        summary = await run_scenario(scenario, store, show_progress=False, framework=framework)
    (episode,) = store.episodes(summary.run_id)
    return episode, summary.run_id, server


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("name", list(SHAPES))
async def test_the_stored_reward_is_tau2s_on_every_shape(tmp_path, store, name, framework):
    shape = SHAPES[name]
    task = domain(shape.domain).tasks[shape.task]
    episode, run_id, _ = await run_shape(tmp_path, store, shape, framework)
    reference = reference_of(name)
    if framework == "tau2" and shape.agent_stops:
        assert episode.status == "error" and "ended on agent_stop" in episode.error_reason, episode.error_reason
        return
    termination = {"transfer": "user_stop"}.get(episode.termination, episode.termination)
    assert termination == reference.termination, (episode.termination, episode.error_reason, reference)
    rebuilt = rescored(store, run_id, episode, task, shape.domain)
    if reference.raised:
        assert rebuilt.raised == reference.raised
        assert episode.status == "error" and "τ²'s evaluator failed" in episode.error_reason, episode.error_reason
        return
    assert episode.status == "done", episode.error_reason
    stored = store.rewards(run_id)[episode.episode_id]
    assert (stored.reward, stored.breakdown) == (rebuilt.reward, rebuilt.breakdown), "the rebuilt episode scores as stored"
    assert stored.reward == reference.reward == episode.task_score, "τ²'s own loop on the same script gives the same reward"
    assert (reference.breakdown or {}) == (rebuilt.breakdown or {})


WRITTEN_FOR = {
    "several_calls_in_one_message": ("user_stop", 1.0), "calls_without_ids": ("user_stop", 1.0),
    "text_beside_a_call": ("user_stop", 1.0), "required_information_said_with_the_stop": ("agent_stop", 1.0),
    "wrong_arguments_then_user_stop": ("user_stop", 0.0), "a_task_history_with_calls": ("user_stop", 1.0),
    "transfer": ("user_stop", 1.0), "out_of_scope": ("user_stop", 0.0), "telecom_user_tools": ("user_stop", 1.0),
    "telecom_user_text_beside_its_call": ("user_stop", 1.0), "retail_every_expected_call_in_one_message_with_text": ("user_stop", 1.0),
    "assistant_stop_on_the_last_step": ("max_steps", 0.0), "user_stop_on_the_last_step": ("max_steps", 0.0),
    "an_evaluation_that_raises": ("user_stop", None), "max_errors": ("too_many_errors", 0.0),
    "max_errors_in_one_batch": ("too_many_errors", 0.0), "both_limits_at_once": ("too_many_errors", 0.0),
    "an_unknown_tool_then_user_stop": ("user_stop", 1.0), "max_steps_in_a_tool_loop": ("max_steps", 0.0),
}
"""What τ²'s own loop gives each script: the suite's comparisons mean something only if the scripts reach these."""


def test_tau2s_own_loop_gives_each_shape_the_verdict_it_was_written_for():
    assert set(WRITTEN_FOR) == set(SHAPES)
    got = {name: (reference_of(name).termination, reference_of(name).reward) for name in SHAPES}
    assert got == WRITTEN_FOR
    assert reference_of("an_evaluation_that_raises").raised
