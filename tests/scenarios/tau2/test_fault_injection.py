"""Planted user faults: the plan's grammar and the spec field's message, the catalogue's tags and rules, the planting
user around the scripted goal-following user, the grid's episode ids and conditions, and the rules on planted faults
and near misses in lab episodes of every domain (played without a store, the native loop straight)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from testbed.control_tokens import GENERIC
from testbed.frameworks.tool_episode import ToolEpisode, step_loop
from testbed.loop.participants import TurnSampling
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.episode import start_episode
from testbed.scenarios.tau2.fault_injection import (FAULT_DETAIL_KEY, FAULT_KEY, FAULT_TURN_KEY, FAULTS, NEAR_MISSES,
                                                    PLANTED, FaultyUser, applicable, plan_record)
from testbed.scenarios.tau2.fault_lab import LabAssistant, LabUser, stop_turn
from testbed.scenarios.tau2.fault_tags import RULE_TAGS, USER_ERROR_TAGS
from testbed.scenarios.tau2.participants import GoalUser, ToolAssistant
from testbed.scenarios.tau2.scripted_user import ScriptedGoalUser, UserScript
from testbed.scenarios.tau2.user_faults import FAULT_KINDS, detect_faults
from testbed.specs.tau2 import USER_FAULTS, FaultPlan, Tau2ScenarioSpec, parse_plan, plan_of
from testbed.transcript import Message, Transcript, is_user

SPEC = {"kind": "tau2", "name": "t", "domain": "mock", "assistant": "a.yaml", "user": "u.yaml"}


def test_a_plan_is_kind_at_turn_and_none_plants_nothing():
    assert parse_plan("none") is None
    plan = parse_plan("invented_fact@2")
    assert plan == FaultPlan("invented_fact", 2) and plan.label == "invented_fact@2"
    assert plan_of(plan.perturbation) == plan and plan_of("none") is None and plan_of("typo-swap") is None


@pytest.mark.parametrize("text, says", [("invented_facts@2", "unknown user fault 'invented_facts'"),
                                        ("invented_fact", "names no user turn"), ("invented_fact@0", "names no user turn"),
                                        ("invented_fact@x", "names no user turn")])
def test_the_spec_field_refuses_a_bad_plan_saying_how_to_write_one(text, says):
    with pytest.raises(ValidationError) as caught:
        Tau2ScenarioSpec(**SPEC, user_faults=["none", text])
    message = str(caught.value)
    assert says in message and "fix: write none or KIND@TURN" in message and "premature_stop" in message
    with pytest.raises(ValidationError, match="values repeat"):
        Tau2ScenarioSpec(**SPEC, user_faults=["none", "none"])


def test_the_field_is_left_out_of_the_spec_at_its_default_so_old_spec_hashes_stay():
    assert "user_faults" not in Tau2ScenarioSpec(**SPEC).model_dump()
    assert Tau2ScenarioSpec(**SPEC, user_faults=["none", "premature_stop@3"]).model_dump()["user_faults"][1] == "premature_stop@3"


def test_every_plannable_kind_is_catalogued_with_its_tau2_tag_and_rule():
    assert list(PLANTED) == list(USER_FAULTS)
    for fault in FAULTS:
        assert fault.tag in USER_ERROR_TAGS and not fault.near_miss
        assert fault.rule is None or (fault.rule in FAULT_KINDS and RULE_TAGS[fault.rule] == fault.tag)
    assert all(n.near_miss and n.rule in FAULT_KINDS for n in NEAR_MISSES)
    assert {f.name: f.rule for f in FAULTS if f.rule is None} == {"contradiction": None, "ignores_instruction": None}


def test_the_planting_user_wraps_the_scripted_user_and_records_the_plan_on_its_turn_only():
    task = domain("airline").tasks[next(t for t in sorted(domain("airline").tasks) if applicable("revealed_early", domain("airline").tasks[t]))]
    agent = SimpleNamespace(spec=SimpleNamespace(name="scripted-user"))
    inner = ScriptedGoalUser(agent, None, UserScript.of(task), "instructed", "", TurnSampling(0.0, 64))
    user = FaultyUser(inner, task, FaultPlan("invented_fact", 2), seed=3)
    transcript = Transcript([Message("system", "policy", "x", 0), Message("assistant", "Hi! How can I help you today?", "tau2", 1)])
    first = asyncio.run(user.respond(transcript))
    assert first == asyncio.run(inner.respond(transcript)), "turns before the planned one are the inner user's"
    transcript.append(first)
    transcript.append(Message("assistant", "Could you tell me more?", "agent", transcript.next_turn))
    planted = asyncio.run(user.respond(transcript))
    said = asyncio.run(inner.respond(transcript)).content
    assert planted.content.startswith(said.rstrip(".")) and planted.content != said
    assert planted.sampling[FAULT_KEY] == "invented_fact" and planted.sampling[FAULT_TURN_KEY] == 2
    assert planted.sampling["scripted"] is True, "the inner user's own sampling is kept"
    fact = planted.sampling[FAULT_DETAIL_KEY].split(" ", 1)[1]
    assert fact in planted.content and fact not in str(task.user_scenario)
    transcript.append(planted)
    transcript.append(Message("assistant", "Thanks.", "agent", transcript.next_turn))
    assert FAULT_KEY not in (asyncio.run(user.respond(transcript)).sampling or {}), "planted once"
    assert user.derive(mode="raw").inner.mode == "raw" and user.derive(mode="raw").plan == user.plan


def test_the_grid_keeps_clean_episode_ids_and_puts_the_plan_in_the_perturbation(tau2_spec):
    from testbed.scenarios.tau2.kind import Tau2Kind

    before = [v for _, vs in Tau2Kind().plan(tau2_spec()) for v in vs]
    after = [v for _, vs in Tau2Kind().plan(tau2_spec(user_faults=["none", "premature_stop@2"])) for v in vs]
    assert [v.key.episode_id for v in before] == [v.key.episode_id for v in after if v.user_fault is None]
    planted = [v for v in after if v.user_fault is not None]
    assert [v.key.perturbation for v in planted] == ["user-fault:premature_stop@2"]
    assert planted[0].key.episode_id not in {v.key.episode_id for v in before}
    assert {v.key.perturbation for v in before} == {"none"}


def lab_episode(domain_name: str, task, plan: FaultPlan | None) -> tuple[list[Message], str]:
    """One lab episode of `task` with `plan` planted, played by the lab's instruments in the native loop."""
    from testbed.scenarios.tau2.prompts import user_prompt

    d = domain(domain_name)
    agent = SimpleNamespace(spec=SimpleNamespace(name="fault-lab", max_retries=0))
    transcript, desk = start_episode(task, d.new_environment, "policy", "fault-lab", "episode-1")
    sampling = TurnSampling(0.0, 64)
    assistant = ToolAssistant(agent, LabAssistant({"episode-1": (task, plan)}), d.tools, GENERIC, sampling)
    prompt = user_prompt("{guidelines}\n<scenario>\n{scenario}\n</scenario>", task, with_tools=bool(d.user_tools))
    user = GoalUser(agent, LabUser([task]), "instructed", prompt, d.user_tools, GENERIC, sampling)
    if plan is not None:
        user = FaultyUser(user, task, plan, seed=0)
    termination = asyncio.run(step_loop(ToolEpisode(transcript, assistant, user, desk, 200, 10)))
    return transcript.messages, str(termination.value if hasattr(termination, "value") else termination)


def pick(domain_name: str, *kinds: str):
    """The first task of the domain (no message history) on which every kind applies."""
    d = domain(domain_name)
    return next(d.tasks[t] for t in sorted(d.task_ids(d.default_split))
                if all(applicable(k, d.tasks[t]) for k in kinds)
                and not (d.tasks[t].initial_state and d.tasks[t].initial_state.message_history))


DOMAIN_OF = {"revealed_early": "retail", "ungrounded_device_claim": "telecom", "near_device_after_check": "telecom",
             "near_revealed_after_ask": "airline"}
TURN_OF = {"revealed_early": 1, "premature_stop": 3, "invented_fact": 3, "ungrounded_device_claim": 1,
           "answers_as_agent": 2, "contradiction": 3, "ignores_instruction": 4, "near_revealed_after_ask": 2,
           "near_agent_said_first": 3, "near_device_after_check": 3, "near_stop_after_transfer": 4,
           "near_stop_after_refusal": 4}


@pytest.mark.parametrize("kind", [k for k in USER_FAULTS if k != "near_stop_after_done"])
def test_each_kind_is_planted_at_its_turn_and_its_rule_fires_on_a_fault_and_not_on_a_near_miss(kind):
    domain_name = DOMAIN_OF.get(kind, "mock" if kind != "near_stop_after_refusal" else "airline")
    task = pick(domain_name, kind)
    plan = FaultPlan(kind, TURN_OF[kind])
    messages, termination = lab_episode(domain_name, task, plan)
    record = plan_record(messages)
    assert record is not None and record[:2] == (kind, plan.turn)
    users = [m for m in messages if is_user(m) and m.spoken]
    assert users[plan.turn - 1].turn_index == record[2], "the plan's turn is the user's n-th spoken turn"
    flagged = {(f.kind, f.turn_index) for f in detect_faults(task, messages, termination)}
    rule = PLANTED[kind].rule
    if kind == "invented_fact" and record[3].split()[0] in ("date", "name-unmarked"):
        assert (rule, record[2]) not in flagged, "the lab measures this miss: the rules read no dates nor unmarked names"
    elif PLANTED[kind].near_miss:
        assert (rule, record[2]) not in flagged
    elif rule is not None and rule != "role_drift":
        assert (rule, record[2]) in flagged


def test_a_clean_lab_episode_runs_every_domain_to_the_users_stop_after_the_work_with_no_fault():
    for domain_name in ("mock", "airline", "retail", "telecom"):
        task = pick(domain_name, "premature_stop")
        messages, termination = lab_episode(domain_name, task, None)
        users = [m for m in messages if is_user(m) and m.spoken]
        assert termination == "user_stop", domain_name
        assert len(users) == stop_turn(task) - 1, "the stop turn is the bare signal, which is not kept"
        assert detect_faults(task, messages, termination) == [], domain_name


def failed(message: Message) -> Message:
    """The message, a tool result turned into an error."""
    if message.tool_result is None:
        return message
    return replace(message, content="error", tool_result=replace(message.tool_result, error=True))


def test_a_stop_after_the_agents_closing_offer_is_no_premature_stop_even_with_the_actions_failed():
    task = pick("mock", "premature_stop")
    messages, termination = lab_episode("mock", task, FaultPlan("near_stop_after_done", stop_turn(task)))
    assert plan_record(messages) is not None and termination == "user_stop"
    broken = [failed(m) for m in messages]
    assert not [f for f in detect_faults(task, broken, termination) if f.kind == "premature_stop"]
    cut = broken[:max(i for i, m in enumerate(broken) if "anything else" in m.content)] + broken[-1:]
    assert [f.kind for f in detect_faults(task, cut, termination)] == ["premature_stop"], "without the offer it is one"


@pytest.mark.parametrize("framework", ["langgraph", "tau2"])
def test_a_plan_under_a_framework_that_talks_to_the_user_itself_is_refused_before_anything_runs(tau2_spec, framework):
    from testbed.frameworks.base import check_framework
    from testbed.specs.errors import SpecError

    scenario = tau2_spec(user_faults=["none", "invented_fact@2"])
    with pytest.raises(SpecError, match=r"user_faults.*invented_fact@2 cannot be planted.*--framework native"):
        check_framework(framework, scenario)
    check_framework("native", scenario)
    with pytest.raises(SpecError, match="field `backend`"):
        check_framework(framework, tau2_spec())
