"""The stored reward is τ²'s: the episode rebuilt from the store's rows with τ²'s own message classes and scored by
τ²'s `evaluate_simulation` gives the same reward, and the loop ends where τ²'s `Orchestrator.run` ends it.

Each case is one of the disagreements an independent re-scoring found: text beside a tool call dropped before
evaluation, a stop on the last allowed step, and an evaluator that raises.
"""

from __future__ import annotations


import pytest
from tau2_rescoring import rescored as verdict_on_rows

from testbed.backends.base import Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.oracle import expected_calls, final_words
from testbed.transcript import Usage

TASK = "create_task_1"
SAYS = "update_task_with_initialization_data"
"""A mock task whose reward needs the assistant to say things (τ²'s communicate check on its text)."""


def text(words: str) -> Completion:
    return Completion(words, "stop", Usage(5, 5))


def in_turn(*replies: Completion) -> ScriptedBackend:
    """A backend answering with `replies` in order, the last one for ever."""
    script = list(replies)
    return ScriptedBackend(lambda request: script.pop(0) if len(script) > 1 else script[0])


def rescored(store, run_id: str, episode, task_id: str = TASK) -> float:
    """τ²'s reward for the stored episode, rebuilt row by row with τ²'s message classes (not through the testbed's
    scoring code) and scored by τ²'s own evaluator (tau2_rescoring, which the conformance suite shares)."""
    return verdict_on_rows(store, run_id, episode, domain("mock").tasks[task_id], "mock").reward


async def test_text_beside_a_tool_call_reaches_the_evaluator(tau2_spec, store):
    task = domain("mock").tasks[SAYS]
    assert task.evaluation_criteria.communicate_info
    words = final_words(task).replace("###STOP###", "").strip()
    assistant = in_turn(Completion(words, "tool_calls", Usage(5, 5), tool_calls=tuple(expected_calls(task))), text("Anything else?"))
    user = in_turn(text("I need a task created."), text("No, thanks. ###STOP###"))
    summary = await run_scenario(tau2_spec(tasks={"ids": [SAYS]}), store, backends={"assistant": assistant, "user": user},
                                 show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    call = next(m for m in store.messages(summary.run_id, episode.key.episode_id) if m.tool_calls)
    assert call.content == words, "the text is stored beside the call"
    assert episode.status == "done" and episode.termination == "user_stop"
    assert episode.task_score == 1.0 == rescored(store, summary.run_id, episode, SAYS), \
        "τ²'s communicate check reads the text written beside the call"


@pytest.mark.parametrize(("max_steps", "termination"), [(4, "max_steps"), (5, "agent_stop")])
async def test_an_assistant_stop_on_the_last_allowed_step_ends_as_max_steps(tau2_spec, store, max_steps, termination):
    assistant = in_turn(text("Could you say more?"), text("Done. ###STOP###"))
    user = in_turn(text("Hi."), text("More."))
    summary = await run_scenario(tau2_spec(max_steps=max_steps), store, backends={"assistant": assistant, "user": user},
                                 show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.termination == termination, "τ²'s loop counts the stop as a step, then checks the step limit"
    assert episode.task_score == rescored(store, summary.run_id, episode) == 0.0


async def test_a_user_stop_on_the_last_allowed_step_ends_as_max_steps(tau2_spec, store):
    assistant = in_turn(text("Could you say more?"))
    user = in_turn(text("Hi."), text("Bye. ###STOP###"))
    summary = await run_scenario(tau2_spec(max_steps=3), store, backends={"assistant": assistant, "user": user}, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.termination == "max_steps"


async def test_an_evaluator_that_raises_keeps_the_episodes_true_termination(tau2_spec, store, monkeypatch):
    from tau2.evaluator.evaluator_action import ActionEvaluator

    def broken(*args, **kwargs):
        raise KeyError("no such reservation")

    monkeypatch.setattr(ActionEvaluator, "calculate_reward", broken)
    backends = {"assistant": in_turn(text("Done.")), "user": in_turn(text("Hi. ###STOP###"))}
    summary = await run_scenario(tau2_spec(), store, backends=backends, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "error" and "τ²'s evaluator failed" in episode.error_reason
    assert episode.termination == "user_stop", "the evaluation error is stored beside how the conversation really ended"
