"""τ²'s `evaluate_simulation` (every criterion but natural-language assertions), its environment check made cheap.

The early outcomes, the action and communication checks and the way the parts combine are τ²'s own
code's, in its order; only the environment check is `testbed.scenarios.tau2.environment_check`'s
(the expected state kept per task, databases compared by the records touched). The result is a τ²
`RewardInfo` equal in every field to what `evaluate_simulation(run, task, EvaluationType.ALL, solo_mode=False,
domain=...)` returns, which tests/scenarios/tau2/test_db_equality.py checks episode by episode.
"""

from __future__ import annotations

from typing import Any

from testbed.scenarios.tau2.environment_check import environment_reward


def simulation_reward(evaluation_name: str, task: Any, run: Any) -> Any:
    """τ²'s reward for a finished `SimulationRun` of `task`, its environments built by the constructor registered in τ²'s
    registry as `evaluation_name`."""
    from tau2.data_model.simulation import RewardInfo, TerminationReason
    from tau2.data_model.tasks import RewardType
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.registry import registry

    if run.termination_reason not in {TerminationReason.AGENT_STOP, TerminationReason.USER_STOP}:
        return RewardInfo(reward=0.0, reward_basis=None,
                          info={"note": f"Simulation terminated prematurely. Termination reason: {run.termination_reason.value}"})
    criteria = task.evaluation_criteria
    if criteria is None:
        return RewardInfo(reward=1.0, reward_basis=None, info={"note": "No evaluation criteria"})
    env_info = environment_reward(evaluation_name, registry.get_env_constructor(evaluation_name), task, run.messages)
    action_info = ActionEvaluator.calculate_reward(task=task, full_trajectory=run.messages)
    communicate_info = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=run.messages)
    basis = set(criteria.reward_basis)
    reward, breakdown = 1.0, {}
    for bases, info in (({RewardType.DB, RewardType.ENV_ASSERTION}, env_info), ({RewardType.ACTION}, action_info),
                        ({RewardType.NL_ASSERTION}, None), ({RewardType.COMMUNICATE}, communicate_info)):
        if basis & bases:
            if info is None:
                raise ValueError("NL assertions are part of the reward basis, but they are not being evaluated.")
            breakdown.update(info.reward_breakdown or {})
            reward *= info.reward
    return RewardInfo(reward=reward, db_check=env_info.db_check, env_assertions=env_info.env_assertions,
                      action_checks=action_info.action_checks, nl_assertions=None,
                      communicate_checks=communicate_info.communicate_checks, reward_basis=criteria.reward_basis,
                      reward_breakdown=breakdown,
                      info={"env": env_info.info, "nl": None, "communicate": communicate_info.info, "action": action_info.info})
