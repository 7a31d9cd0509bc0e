"""The prompts of a τ² episode, τ²'s own: its agent instructions with the domain policy, its user guidelines with the task's scenario."""

from __future__ import annotations

from typing import Any

from testbed.templates import fill_slots

USER_SLOTS = ("guidelines", "scenario")
"""The slots a τ² user prompt file must hold."""


def assistant_prompt(policy: str) -> str:
    """τ²'s LLMAgent system prompt for a domain policy."""
    from tau2.agent.llm_agent import AGENT_INSTRUCTION, SYSTEM_PROMPT

    return SYSTEM_PROMPT.format(domain_policy=policy, agent_instruction=AGENT_INSTRUCTION)


def user_prompt(template: str, task: Any, *, with_tools: bool) -> str:
    """The user's prompt: `template` with τ²'s simulation guidelines (those for a user with tools where it has them)
    and the task's user scenario (persona, reason for the call, known and unknown information, instructions)."""
    from tau2.user.user_simulator import get_global_user_sim_guidelines

    values = {"guidelines": get_global_user_sim_guidelines(use_tools=with_tools), "scenario": str(task.user_scenario)}
    return fill_slots(template, values, required=USER_SLOTS)
