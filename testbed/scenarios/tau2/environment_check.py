"""τ²'s environment check (`EnvironmentEvaluator.calculate_reward`) with the expected state computed once per task and
databases compared by the records they touched.

τ²'s check replays the episode's tool calls on a fresh environment (the predicted state), replays the
task's expected actions on another (the gold state), and compares the two databases' hashes. The gold
state depends on the task alone, so it is kept per process (`gold_state`); the comparison is
`testbed.scenarios.tau2.db_equality.same_database`, the same verdict without serialising every record.
Everything else (what is replayed, in what order, the environment assertions, the reward) follows τ²'s
code step for step; tests/scenarios/tau2/test_db_equality.py holds the two side by side.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from testbed.scenarios.tau2.db_equality import same_database

GOLD_STATES_KEPT = 4096
"""Expected states kept per process (telecom, the largest domain, has 2,285 tasks; each state holds only the records its
actions copied)."""


KEPT_FOR = "testbed-"
"""The prefix of the environment constructors whose expected states are kept: the testbed's (testbed.scenarios.tau2.domains),
whose databases share the parsed records or are small (telecom)."""


@dataclass(frozen=True)
class GoldState:
    """The databases after a task's expected actions, for comparison only (never changed after they are built)."""

    task: Any
    agent_db: Any
    user_db: Any


_gold: OrderedDict[tuple[str, str], GoldState] = OrderedDict()
_gold_lock = threading.Lock()


def _initial_state(task: Any) -> tuple[Any, Any, list]:
    state = task.initial_state
    if state is None:
        return None, None, []
    return state.initialization_data, state.initialization_actions, state.message_history or []


def _build_gold(new_environment: Any, task: Any) -> GoldState:
    from loguru import logger

    data, actions, history = _initial_state(task)
    gold = new_environment()
    gold.set_state(initialization_data=data, initialization_actions=actions, message_history=history)
    for action in task.evaluation_criteria.actions or []:
        try:
            gold.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception as e:  # τ²'s own handling of an expected action that fails: a warning, and on to the next
            logger.warning(f"Error in golden actions {action.name}({action.arguments}): {e}")
    return GoldState(task, gold.tools.db, gold.user_tools.db if gold.user_tools is not None else None)


def gold_state(evaluation_name: str, new_environment: Any, task: Any) -> GoldState:
    """The task's expected state, built at its first evaluation in this process and kept (a task of the same id but other
    content, as tests build, gets its own). Kept only for the testbed's own constructors (KEPT_FOR); any other one,
    τ²'s own included, parses a whole database per environment, which is built afresh every time as τ² does."""
    if not evaluation_name.startswith(KEPT_FOR):
        return _build_gold(new_environment, task)
    key = (evaluation_name, task.id)
    with _gold_lock:
        kept = _gold.get(key)
        if kept is not None and (kept.task is task or kept.task == task):
            _gold.move_to_end(key)
            return kept
    built = _build_gold(new_environment, task)
    with _gold_lock:
        _gold[key] = built
        while len(_gold) > GOLD_STATES_KEPT:
            _gold.popitem(last=False)
    return built


def environment_reward(evaluation_name: str, new_environment: Any, task: Any, trajectory: list, solo_mode: bool = False) -> Any:
    """τ²'s `EnvironmentEvaluator.calculate_reward` for the episode (a τ² RewardInfo, the same in every field)."""
    from tau2.data_model.simulation import DBCheck, EnvAssertionCheck, RewardInfo
    from tau2.data_model.tasks import RewardType

    criteria = task.evaluation_criteria
    if criteria is None:
        return RewardInfo(reward=1.0, info={"note": "No evaluation criteria"})
    if criteria.actions is None and criteria.env_assertions is None:
        return RewardInfo(reward=1.0, db_check=DBCheck(db_match=True, db_reward=1.0),
                          info={"note": "No expected actions or env assertions"})
    data, actions, _ = _initial_state(task)
    predicted = new_environment(solo_mode=solo_mode)
    predicted.set_state(initialization_data=data, initialization_actions=actions, message_history=trajectory)
    gold = gold_state(evaluation_name, new_environment, task)
    agent_match = same_database(gold.agent_db, predicted.tools.db)
    user_match = same_database(gold.user_db, predicted.user_tools.db if predicted.user_tools is not None else None)
    db_match = agent_match and user_match
    db_reward = 1.0 if db_match else 0.0
    checks, assertion_reward = [], 1.0
    for assertion in criteria.env_assertions or []:
        met = predicted.run_env_assertion(assertion, raise_assertion_error=False)
        checks.append(EnvAssertionCheck(env_assertion=assertion, met=met, reward=1.0 if met else 0.0))
        assertion_reward *= 1.0 if met else 0.0
    reward, breakdown = 1.0, {}
    if RewardType.DB in criteria.reward_basis:
        breakdown[RewardType.DB] = db_reward
        reward *= db_reward
    if RewardType.ENV_ASSERTION in criteria.reward_basis:
        breakdown[RewardType.ENV_ASSERTION] = assertion_reward
        reward *= assertion_reward
    return RewardInfo(reward=reward, db_check=DBCheck(db_match=db_match, db_reward=db_reward), env_assertions=checks,
                      reward_basis=criteria.reward_basis, reward_breakdown=breakdown)
