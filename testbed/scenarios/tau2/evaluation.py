"""Scoring a finished τ² episode with τ²'s own evaluator: database state, expected actions, information communicated."""

from __future__ import annotations

import uuid
from typing import Any

from testbed.loop.orchestrator import TerminationReason
from testbed.scenarios.tau2.domains import Tau2Domain
from testbed.scenarios.tau2.simulation_reward import simulation_reward
from testbed.scenarios.tau2.trajectory import to_tau2
from testbed.store import EpisodeReward
from testbed.transcript import Message

TAU2_TERMINATION = {
    TerminationReason.USER_STOP: "user_stop",
    TerminationReason.TRANSFER: "user_stop",
    TerminationReason.AGENT_STOP: "agent_stop",
    TerminationReason.MAX_STEPS: "max_steps",
    TerminationReason.TOO_MANY_ERRORS: "too_many_errors",
}
"""τ²'s termination reason for each of the testbed's: a transfer is the user's stop signal there (`###TRANSFER###`)."""


NEEDS_A_JUDGE = "NL_ASSERTION"
"""The reward part τ²'s evaluator scores with a judge model (natural-language assertions), which the testbed does not run."""


class EvaluationFailed(RuntimeError):
    """τ²'s evaluator raised on a finished episode; the message says why (the episode is stored as an error with it)."""


def needs_a_judge(task: Any) -> bool:
    """Whether the task's reward rests on natural-language assertions, which only a judge model can score."""
    criteria = task.evaluation_criteria
    return criteria is not None and any(getattr(b, "value", b) == NEEDS_A_JUDGE for b in criteria.reward_basis)


def evaluate(domain: Tau2Domain, task: Any, messages: list[Message], termination: TerminationReason) -> EpisodeReward | None:
    """τ²'s reward for the episode (`evaluate_simulation` on every criterion but natural-language assertions, its
    environment check made cheap: testbed.scenarios.tau2.simulation_reward gives the same RewardInfo); an
    episode that did not end on a stop signal scores 0, as τ² scores it. None for a task whose reward rests on
    natural-language assertions (unscored, never a guessed reward); EvaluationFailed when the evaluator raises."""
    if needs_a_judge(task):
        return None
    from tau2.data_model.simulation import SimulationRun
    from tau2.utils.utils import get_now

    now = get_now()
    run = SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time=now, end_time=now, duration=0.0,
                        termination_reason=TAU2_TERMINATION[termination], messages=to_tau2(messages))
    try:
        info = simulation_reward(domain.evaluation_name, task, run)
    except Exception as exc:  # the evaluator replays the episode on fresh environments; any failure there is its reason
        raise EvaluationFailed(f"τ²'s evaluator failed on task {task.id}: {type(exc).__name__}: {str(exc)[:300]}") from exc
    breakdown = {getattr(k, "value", str(k)): float(v) for k, v in (info.reward_breakdown or {}).items()}
    details = info.model_dump(mode="json", exclude={"reward", "reward_breakdown"}, exclude_none=True)
    return EpisodeReward(float(info.reward), breakdown, details)
