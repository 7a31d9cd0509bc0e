"""The rules read the conversation: the second saying of the user's own turn restates, the third loops; a first
reply is judged exactly as before."""

from __future__ import annotations

from testbed.conversation_context import Earlier
from testbed.judges.local.conversation import conversation_features
from testbed.judges.local.judge import LocalJudge, analyse, classify
from testbed.judges.verdict import JudgeInput
from testbed.transcript import ASSISTANT, USER

QUESTION = "Can you help me plan meals for next week on a small budget?"
ASK = "Which foods do you like to cook with?"
TURN = "How do I keep my grocery bill under forty dollars?"


def _context(*user_turns: str) -> tuple[Earlier, ...]:
    out: list[Earlier] = []
    for text in user_turns:
        out += [Earlier(ASSISTANT, "Here are some cheap staples: rice, beans and eggs."), Earlier(USER, text)]
    return tuple(out)


def test_without_a_conversation_the_verdict_is_the_turn_alone():
    assert classify(QUESTION, ASK, TURN) == analyse(QUESTION, ASK, TURN)[0]
    assert classify(QUESTION, ASK, TURN, context=_context("Something else entirely, about my dog.")) == classify(QUESTION, ASK, TURN)


def test_saying_ones_own_earlier_turn_again_restates_and_a_third_time_loops():
    judge = LocalJudge()
    once = judge.judge(JudgeInput("t", QUESTION, ASK, TURN, _context(TURN)))
    twice = judge.judge(JudgeInput("t", QUESTION, ASK, TURN, _context(TURN, TURN)))
    assert (once.label, twice.label) == ("restate_question", "degenerate")
    assert "own earlier turn" in once.reason and not once.followup


def test_the_measurements_see_position_repeats_and_a_question_asked():
    c = conversation_features(TURN, ASK, _context("I like rice.", TURN))
    assert (c.position, c.own_repeats, c.answer_asks) == (3, 1, True)
    assert c.own_tri == 1.0 and c.own_overlap == 1.0
    first = conversation_features(TURN, "Rice is cheap.", ())
    assert (first.position, first.own_repeats, first.answer_asks, first.tools) == (1, 0, False, False)
