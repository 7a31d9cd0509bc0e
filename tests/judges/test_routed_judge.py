"""The default learned judge routes each turn: a first reply to the first-reply model, a turn with a conversation
before it to the conversation model, under one identity naming both."""

from __future__ import annotations

from testbed.conversation_context import Earlier
from testbed.judges.base import make_judge
from testbed.judges.learned.routed import RoutedLearnedJudge
from testbed.judges.specs import load_judge
from testbed.judges.verdict import JudgeInput
from testbed.transcript import ASSISTANT, USER

FIRST = JudgeInput("a", "What is 6 * 7?", "6 * 7 = 42.", "Why 42 and not 48?")
LATER = JudgeInput("b", "What is 6 * 7?", "Because six sevens are 42.", "Why 42 and not 48?",
                   (Earlier(ASSISTANT, "6 * 7 = 42."), Earlier(USER, "Why 42?")))


def test_each_turn_goes_to_the_model_for_its_case_in_order():
    judge = make_judge(load_judge("learned"))
    assert isinstance(judge, RoutedLearnedJudge)
    assert judge.identity.version == f"{judge.later.version}~{judge.first.version}"
    assert judge.later.version.startswith("learned-6+") and judge.first.version.startswith("learned-3+")
    mixed = judge.judge_many([LATER, FIRST, LATER])
    assert mixed[1] == judge.first.judge(FIRST) and mixed[0] == mixed[2] == judge.later.judge(LATER)
    assert judge.judge_many([]) == []
