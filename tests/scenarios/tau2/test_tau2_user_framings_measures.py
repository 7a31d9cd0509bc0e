"""The measures of benchmarks/tau2_user_framings.py: the user speaking as the agent, and the task's request stated."""

from __future__ import annotations

import sys

import pytest

from helpers import REPO
from testbed.scenarios.tau2.domains import domain

sys.path.insert(0, str(REPO / "benchmarks"))

from tau2_user_framings import reason_for_call, request_words, speaks_as_agent, states_request  # noqa: E402


@pytest.mark.parametrize(("turn", "as_agent"), [
    ("Hello! How can I assist you today?", True),
    ("Is there anything else I can help you with?", True),
    ("I'd be happy to help with that.", True),
    ("Thank you for contacting us.", True),
    ("I'm so glad you're here! I'm here to help with whatever you're interested in.", True),
    ("Hi, I need a task called 'Important Meeting' for user_1.", False),
    ("Can you help me cancel my reservation?", False),
])
def test_a_user_turn_that_offers_help_speaks_as_the_agent(turn, as_agent):
    assert speaks_as_agent(turn) is as_agent


@pytest.mark.parametrize(("domain_name", "task_id", "turn", "stated"), [
    ("mock", "create_task_1", "Hi, please create a task called Important Meeting for user_1.", True),
    ("mock", "create_task_1", "Hello! How can I assist you today?", False),
    ("mock", "create_task_1", "I need a task.", False),
    ("mock", "create_task_1", "I'm here to help with any task, whether it's scheduling a meeting or more.", False),
    ("mock", "update_task_1", "I'd like task_1 marked as completed.", True),
    ("airline", "0", "I want to cancel my reservation EHGLP3.", True),
    ("airline", "0", "How can I help you with your reservation?", False),
])
def test_a_user_turn_states_the_request_with_enough_of_its_words(domain_name, task_id, turn, stated):
    wanted = request_words(reason_for_call(domain(domain_name).tasks[task_id]))
    assert states_request(turn, wanted) is stated
