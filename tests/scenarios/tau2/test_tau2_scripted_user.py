"""The scripted τ² user (`backend: tau2-scripted`): a goal-following user built from the task, with no model.

Its answers are checked on synthetic tasks built with τ²'s own classes; a whole episode runs under the native loop
and every framework against a real assistant server on 127.0.0.1, so the scripted user is what each loop's user is,
and where it cannot play (telecom, the assistant's seat) the spec is refused.
"""

from __future__ import annotations

import pytest

from helpers import write_yaml
from tau2_script_server import ScriptServer, call, say

from testbed.running.runner import run_scenario
from testbed.scenarios.tau2.scripted_user import (CARRY_ON, DONT_KNOW, GO_AHEAD, PATIENCE, STOP, TRANSFER, UserScript,
                                                  first_person)
from testbed.scenarios.tau2.scripted_user_server import agents_last_words
from testbed.specs.errors import SpecError

FRAMEWORKS = ("native", "autogen", "langgraph", "camel", "tau2")
MEETING = {"user_id": "user_1", "title": "Important Meeting"}
REQUEST = "I am a team member who needs to create a task for an upcoming meeting."
"""The first sentence of the mock task create_task_1's instructions, in the customer's words."""


def synthetic_task(**instructions):
    """A τ² task with structured user instructions (synthetic text, not the package's)."""
    from tau2.data_model.tasks import StructuredUserInstructions, Task, UserScenario

    fields = {"domain": "shop", "reason_for_call": "", "known_info": None, "unknown_info": None, "task_instructions": ""}
    return Task(id="t", user_scenario=UserScenario(instructions=StructuredUserInstructions(**{**fields, **instructions})))


@pytest.fixture
def script():
    return UserScript.of(synthetic_task(
        reason_for_call="You want to return the blue lamp from order #A1.",
        known_info="You are Ada Lovelace.\nYour zip code is 12345.",
        unknown_info="You do not remember your email address.",
        task_instructions="If the agent says the return window has closed, mention that the lamp arrived broken.\n\n"
                          "You want the refund on your gift card."))


def test_the_first_turn_states_the_request_and_what_it_knows(script):
    assert script.reply("Hi! How can I help you today?", said=()) == (
        "I want to return the blue lamp from order #A1. I am Ada Lovelace. My zip code is 12345.")


def test_answers_come_from_what_the_task_says_it_knows(script):
    assert script.reply("Could you give me your zip code?", said=["Hi."]) == "My zip code is 12345."
    assert script.reply("May I have your full name?", said=["Hi."]) == "I am Ada Lovelace."
    assert script.reply("What email address is on the account?", said=["Hi."]) == "I do not remember my email address."
    assert script.reply("Which refund method would you like, the card or the gift card?", said=["Hi."]) == \
        "I want the refund on my gift card."
    assert script.reply("What is your favourite colour?", said=["Hi."]) == DONT_KNOW


def test_a_conditional_instruction_answers_the_agent_turn_it_names(script):
    assert script.reply("I'm sorry, the return window for this order has closed.", said=["Hi."]) == "the lamp arrived broken."


def test_confirmation_done_and_transfer(script):
    assert script.reply("Shall I proceed with the return?", said=["Hi."]) == GO_AHEAD
    assert script.reply("The return has been processed. Is there anything else I can help you with?", said=["Hi."]) == STOP
    assert script.reply("The return is complete, it has been processed.", said=["Hi."]) == STOP
    assert script.reply("Done.", said=["Hi."]) == STOP
    assert script.reply("I've found your order.", said=["Hi."]) == CARRY_ON
    assert script.reply("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.", said=["Hi."]) == TRANSFER
    assert script.reply("How can I help you?", said=["Hi."]) == script.request


def test_second_person_becomes_the_customers_first_person():
    assert first_person("You are Bo. Your id is b_1. The agent told you that you were right.") == \
        "I am Bo. My id is b_1. The agent told me that I was right."


def test_a_frameworks_flipped_view_gives_the_agents_last_words():
    view = [{"role": "system", "content": "prompt"}, {"role": "user", "content": "Hi! How can I help you today?"}]
    assert agents_last_words(view) == "Hi! How can I help you today?"
    view += [{"role": "assistant", "content": "My lamp."}, {"role": "user", "content": [{"type": "text", "text": "Name?"}]}]
    assert agents_last_words(view) == "Name?"
    assert agents_last_words(view + [{"role": "assistant", "content": "Ada."}]) == ""


async def run_against_scripted_user(tmp_path, store, framework: str, script: dict, **overrides):
    """The mock task create_task_1 with the scripted user and an assistant on a real server playing `script`."""
    from helpers import REPO
    from testbed.specs.loader import load_scenario

    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    async with ScriptServer({"assistant": script, "user": [say("unused")]}) as server:
        write_yaml(tmp_path / "assistant.yaml", {"name": "assistant", "backend": "vllm", "model": "assistant",
                                                 "base_url": server.base_url, "max_retries": 0})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": ["create_task_1"]}, "assistant": "assistant.yaml",
            "user": "tau2-scripted-user", "temperatures": [0.0], "max_tokens": 32, "max_steps": 20, **overrides}))
        summary = await run_scenario(scenario, store, show_progress=False, framework=framework)
    (episode,) = store.episodes(summary.run_id)
    return episode, store.messages(summary.run_id, episode.key.episode_id), server


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_every_loop_runs_the_scripted_user_to_tau2s_reward(tmp_path, store, framework):
    pytest.importorskip({"autogen": "autogen_agentchat", "langgraph": "langgraph", "camel": "camel"}.get(framework, "tau2"))
    episode, messages, server = await run_against_scripted_user(tmp_path, store, framework, [
        call("create_task", MEETING), say("Your task has been created. Is there anything else I can help you with?")])
    assert (episode.status, episode.termination, episode.task_score) == ("done", "user_stop", 1.0), episode.error_reason
    assert episode.key.user_agent == "scripted-user"
    users = [m for m in messages if m.role == "user"]
    assert users[0].content.startswith(REQUEST) and users[0].speaker == "scripted-user"
    assert len(users) == 1, [m.content for m in users]
    assert len(server.requests["user"]) == 0


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_after_a_tasks_history_the_scripted_user_still_states_its_request(tmp_path, store, framework):
    pytest.importorskip({"autogen": "autogen_agentchat", "langgraph": "langgraph", "camel": "camel"}.get(framework, "tau2"))
    episode, messages, _ = await run_against_scripted_user(tmp_path, store, framework, [
        call("update_task_status", {"task_id": "task_2", "status": "completed"}),
        say("It has been done. Is there anything else I can help you with?")],
        tasks={"ids": ["update_task_with_message_history"]})
    own = [m.content for m in messages if m.role == "user" and m.speaker == "scripted-user"]
    assert own[0].startswith("Continue the conversation about task management."), own
    assert (episode.status, episode.termination, episode.task_score) == ("done", "user_stop", 1.0), (own, episode.error_reason)


async def test_the_oracle_earns_its_reward_against_the_scripted_user_on_every_mock_task():
    from testbed.frameworks.tool_episode import ToolEpisode, step_loop
    from testbed.scenarios.tau2.domains import domain
    from testbed.scenarios.tau2.episode import start_episode
    from testbed.scenarios.tau2.evaluation import evaluate
    from testbed.scenarios.tau2.oracle import OracleAssistant, expected_calls, oracle_episode
    from testbed.scenarios.tau2.scripted_user import conversation_so_far
    from testbed.transcript import Message

    class Scripted:
        def __init__(self, task):
            self.script = UserScript.of(task)

        async def respond(self, transcript):
            return Message("user", self.script.reply(*conversation_so_far(transcript, "scripted")), "scripted",
                           transcript.next_turn)

    d = domain("mock")
    for task_id, task in d.tasks.items():
        info = " ".join(map(str, task.evaluation_criteria.communicate_info or []))
        transcript, desk = start_episode(task, d.new_environment, "oracle", "oracle")
        oracle = OracleAssistant(expected_calls(task), f"Done. {info} Is there anything else I can help you with?")
        termination = await step_loop(ToolEpisode(transcript, oracle, Scripted(task), desk, max_steps=200, max_errors=10))
        reward = getattr(evaluate(d, task, transcript.messages, termination), "reward", None)
        assert termination == "user_stop" and reward == getattr((await oracle_episode("mock", task_id))[2], "reward", None), task_id


async def test_a_scripted_user_whose_agent_goes_in_circles_gives_up(tmp_path, store):
    episode, messages, _ = await run_against_scripted_user(tmp_path, store, "native", [say("What is your favourite colour?")])
    assert (episode.status, episode.termination) == ("done", "user_stop")
    assert [m.content for m in messages if m.role == "user"][1:] == [DONT_KNOW] * PATIENCE


def test_patience_counts_fruitless_turns_in_a_row_only(script):
    circling = "Let me see."
    assert script.reply(circling, [script.request, CARRY_ON, CARRY_ON]) == CARRY_ON
    assert script.reply(circling, [script.request, CARRY_ON, DONT_KNOW, CARRY_ON]) == STOP
    assert script.reply(circling, [CARRY_ON, "My zip code is 12345.", CARRY_ON, CARRY_ON]) == CARRY_ON
    assert script.reply("Could you give me your zip code?", [CARRY_ON] * 5) == "My zip code is 12345."


def test_the_scripted_user_is_refused_where_it_cannot_play(tau2_spec):
    from testbed.scenarios.tau2.kind import Tau2Kind

    with pytest.raises(SpecError, match="phone tools"):
        Tau2Kind().plan(tau2_spec(domain="telecom", user="tau2-scripted-user", tasks={"limit": 1}))
    with pytest.raises(SpecError, match="not an assistant"):
        Tau2Kind().plan(tau2_spec(assistant="tau2-scripted-user"))


def test_the_scripted_user_plays_any_user_mode_of_a_tau2_scenario_and_nothing_else(tau2_spec):
    from testbed.running.runner import preflight
    from testbed.specs.loader import load_scenario

    preflight(tau2_spec(user="tau2-scripted-user", user_modes=["instructed", "raw"]))
    with pytest.raises(SpecError, match="plays only the user of τ² tasks, not a `dialogue` scenario"):
        preflight(load_scenario("dialogue-gsm8k", user="tau2-scripted-user"))


def test_the_quickstart_sweep_runs_the_assistant_against_a_model_user_and_the_scripted_user():
    from testbed.running.runner import plan
    from testbed.specs.sweep import find_sweep, load_sweep

    sweep = load_sweep(find_sweep("tau2-quickstart"))
    assert [c.user.spec.backend for c in sweep.cells] == ["vllm", "tau2-scripted"]
    assert len({c.assistant.spec.name for c in sweep.cells}) == 1 and sweep.conditions.domain == "mock"
    keys = [v.key for c in sweep.cells for _, vs in plan(c) for v in vs]
    assert len(keys) == 9 * 2 and sum(k.user_model == "tau2-scripted" for k in keys) == 9
