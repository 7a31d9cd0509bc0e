"""The default learned judge routes each turn: a probe's first reply (or one of an unknown kind) to the first-reply
model, every other turn to the conversation model, under one identity naming both models and the routed kinds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from testbed.conversation_context import Earlier
from testbed.judges.base import make_judge
from testbed.judges.learned.routed import RoutedLearnedJudge
from testbed.judges.specs import JudgeSpec, load_judge
from testbed.judges.verdict import JudgeInput
from testbed.transcript import ASSISTANT, USER

FIRST = JudgeInput("a", "What is 6 * 7?", "6 * 7 = 42.", "Why 42 and not 48?")
LATER = JudgeInput("b", "What is 6 * 7?", "Because six sevens are 42.", "Why 42 and not 48?",
                   (Earlier(ASSISTANT, "6 * 7 = 42."), Earlier(USER, "Why 42?")))


def test_each_turn_goes_to_the_model_for_its_case_in_order():
    judge = make_judge(load_judge("learned"))
    assert isinstance(judge, RoutedLearnedJudge)
    assert judge.identity.version == f"{judge.later.version}~{judge.first.version}~probe"
    assert judge.later.version.startswith("learned-6+") and judge.first.version.startswith("learned-3+")
    mixed = judge.judge_many([LATER, FIRST, LATER])
    assert mixed[1] == judge.first.judge(FIRST) and mixed[0] == mixed[2] == judge.later.judge(LATER)
    assert judge.judge_many([]) == []


def test_a_first_reply_goes_to_the_first_reply_model_only_for_its_kinds_or_an_unknown_kind():
    judge = make_judge(load_judge("learned"))
    probe, dialogue, tau2 = (replace(FIRST, kind=k) for k in ("probe", "dialogue", "tau2"))
    assert [judge.for_first_model(i) for i in (probe, FIRST, dialogue, tau2, replace(LATER, kind="probe"))] == [True, True, False, False, False]
    got = judge.judge_many([dialogue, probe, FIRST])
    assert got[0] == judge.later.judge(dialogue) and got[1] == got[2] == judge.first.judge(FIRST)
    assert judge.later.judge(dialogue) != judge.first.judge(dialogue), "the two models must differ on this turn for the test to tell them apart"


def test_every_first_reply_goes_to_the_first_reply_model_when_the_spec_names_no_kinds():
    routed = make_judge(load_judge("learned"))
    every = type(routed)(routed.name, routed.later, routed.first)
    assert every.identity.version == f"{routed.later.version}~{routed.first.version}"
    assert every.judge_many([replace(FIRST, kind="dialogue")])[0] == routed.first.judge(FIRST)


@pytest.mark.parametrize("fields, wrong", [({"first_reply_kinds": ["probe"]}, "no first_reply_model_file"),
                                           ({"first_reply_model_file": "m.json", "first_reply_kinds": ["chat"]}, "unknown scenario kind 'chat'"),
                                           ({"first_reply_model_file": "m.json", "first_reply_kinds": []}, "is empty")])
def test_a_spec_naming_first_reply_kinds_wrongly_is_refused(fields, wrong):
    with pytest.raises(ValueError, match=wrong):
        JudgeSpec.model_validate({"name": "x", "kind": "learned", "task": "failure_modes", "model_file": "m.json", **fields})
