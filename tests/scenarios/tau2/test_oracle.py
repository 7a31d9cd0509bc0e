"""τ²'s evaluator through the testbed's episode loop: the oracle scores 1.0 where the criteria are actions and state,
a wrong action scores 0, and the copied-on-access database leaves the parsed one untouched."""

from __future__ import annotations

import json
import random

import pytest

from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.episode import environment_response
from testbed.frameworks.tool_desk import ToolDesk
from testbed.scenarios.tau2.oracle import OracleAssistant, expected_calls, final_words, oracle_episode
from testbed.transcript import ToolCall

SCORED_BY_ACTIONS_AND_STATE = {"DB", "ACTION", "COMMUNICATE"}


def oracle_tasks(name: str, sample: int | None = None) -> list[str]:
    """Tasks whose reward basis is actions, database and communication only, with at least one expected action."""
    tasks = domain(name).tasks
    ids = [t.id for t in tasks.values() if t.evaluation_criteria is not None
           and {b.value for b in t.evaluation_criteria.reward_basis} <= SCORED_BY_ACTIONS_AND_STATE and expected_calls(t)]
    return ids if sample is None else random.Random(0).sample(ids, sample)


@pytest.mark.parametrize("name, sample", [("mock", None), ("airline", 8), ("retail", 8)])
async def test_the_oracle_scores_one_on_every_task_scored_by_actions_and_state(name, sample):
    ids = oracle_tasks(name, sample)
    assert len(ids) >= (5 if name == "mock" else sample)
    for task_id in ids:
        transcript, termination, reward = await oracle_episode(name, task_id)
        assert termination == "agent_stop", task_id
        assert reward.reward == 1.0, (task_id, reward.breakdown, reward.details)
        assert all(v == 1.0 for v in reward.breakdown.values())


async def test_a_wrong_action_scores_zero():
    task = next(t for t in domain("mock").tasks.values() if t.id in oracle_tasks("mock"))
    calls = expected_calls(task)
    wrong = json.loads(calls[0].arguments)
    wrong = {k: (f"{v}-wrong" if isinstance(v, str) else v) for k, v in wrong.items()}
    oracle = OracleAssistant([ToolCall("w", calls[0].name, json.dumps(wrong)), *calls[1:]], final_words(task))
    _, termination, reward = await oracle_episode("mock", task.id, oracle)
    assert termination == "agent_stop" and reward.reward == 0.0


async def test_a_task_with_a_message_history_replays_it_into_the_transcript_and_the_environment():
    task = next(t for t in domain("mock").tasks.values() if t.initial_state and t.initial_state.message_history
                and t.id in oracle_tasks("mock"))
    transcript, _, reward = await oracle_episode("mock", task.id)
    history = task.initial_state.message_history
    assert [m.role for m in transcript.messages[1:1 + len(history)]] == [m.role for m in history]
    assert reward.reward == 1.0


def test_an_episode_never_changes_the_database_every_other_episode_starts_from():
    d = domain("airline")
    before = d.new_environment().get_db_hash()
    writes = lambda c: not c.name.startswith(("get_", "search_", "list_", "calculate", "think"))
    task = next(d.tasks[t] for t in oracle_tasks("airline") if any(writes(c) for c in expected_calls(d.tasks[t])))
    desk = ToolDesk(d.new_environment(), environment_response)
    results = [desk.answer(c, "assistant", i) for i, c in enumerate(expected_calls(task))]
    assert not any(r.tool_result.error for r in results)
    assert desk.environment.get_db_hash() != before, "the episode's own database changed"
    assert d.new_environment().get_db_hash() == before, "the next episode's did not"
