"""The τ² user framings beyond τ²'s own (testbed.scenarios.tau2.user_framings): the exact request each sends, the
customer's words kept from its reply, τ²'s stop signals in each, and where each is refused."""

from __future__ import annotations

import pytest

from helpers import REPO
from testbed.backends.base import Capabilities, Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import preflight, run_scenario
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.oracle import expected_calls
from testbed.scenarios.tau2.prompts import user_prompt
from testbed.scenarios.tau2.user_framings import ONESHOT_EXAMPLE, OPENER, TRANSCRIPT_REQUEST, customer_words
from testbed.specs.errors import SpecError
from testbed.transcript import Usage

TASK = "create_task_1"
GREETING = "Hi! How can I help you today?"
STOP_AT_AGENT = {"stop": ["\nAgent:"]}


def text(words: str) -> Completion:
    return Completion(words, "stop", Usage(5, 5))


def scripted(outputs, requests, *, can_continue=True):
    script = iter(outputs)

    def respond(request):
        requests.append(request)
        return next(script)

    return ScriptedBackend(respond, capabilities=Capabilities(continue_user_turn=can_continue))


def the_prompt(domain_name="mock", task_id=TASK, with_tools=False):
    template = (REPO / "scenarios/prompts/user-tau2.md").read_text()
    return user_prompt(template, domain(domain_name).tasks[task_id], with_tools=with_tools)


async def run(tau2_spec, store, mode, user_outputs, *, can_continue=True):
    """One mock episode: the assistant creates the task and says so; the user speaks `user_outputs`."""
    task = domain("mock").tasks[TASK]
    a_requests, u_requests = [], []
    assistant = scripted([Completion("", "tool_calls", Usage(5, 5), tool_calls=expected_calls(task)),
                          text("I created the task 'Important Meeting' for user_1.")], a_requests)
    user = scripted(user_outputs, u_requests, can_continue=can_continue)
    summary = await run_scenario(tau2_spec(user_modes=[mode]), store, backends={"assistant": assistant, "user": user},
                                 show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    return episode, store.messages(summary.run_id, episode.key.episode_id), a_requests, u_requests


async def test_a_transcript_user_continues_the_customer_line_and_only_its_words_reach_the_agent(tau2_spec, store):
    episode, messages, a_requests, u_requests = await run(tau2_spec, store, "transcript", [
        text(" please create a task called 'Important Meeting' for user_1.\nAgent: Sure, one moment."),
        text(" Thanks, that's all. ###STOP###\nAgent: Goodbye!")])
    first, second = u_requests
    assert first.messages == [
        {"role": "system", "content": the_prompt()},
        {"role": "user", "content": TRANSCRIPT_REQUEST.format(transcript=f"Agent: {GREETING}")},
        {"role": "assistant", "content": f"Customer: {OPENER}"}], "the customer's first line is opened for it"
    assert first.continue_final_message and first.tools is None and first.extra == STOP_AT_AGENT
    assert second.messages[-1] == {"role": "assistant", "content": "Customer:"}
    said = "Hi, please create a task called 'Important Meeting' for user_1."
    assert second.messages[1]["content"] == TRANSCRIPT_REQUEST.format(transcript=(
        f"Agent: {GREETING}\n\nCustomer: {said}\n\nAgent: I created the task 'Important Meeting' for user_1.")), \
        "the transcript holds the spoken turns only: no tool call, no tool result"
    assert a_requests[0].messages[-1] == {"role": "user", "content": said}, "the agent's line the model went on to write is cut"
    assert [m.content for m in messages if m.role == "user"] == [said, "Thanks, that's all."]
    assert episode.termination == "user_stop" and episode.task_score == 1.0
    assert {m.sampling["mode"] for m in messages if m.role == "user"} == {"transcript"}


async def test_a_transcript_user_on_a_backend_that_cannot_continue_gets_the_open_customer_line(tau2_spec, store):
    episode, messages, _, (first, _) = await run(tau2_spec, store, "transcript", [
        text("Customer: I need a task called 'Important Meeting' for user_1."), text("Customer: ###STOP###")],
        can_continue=False)
    transcript = TRANSCRIPT_REQUEST.format(transcript=f"Agent: {GREETING}")
    assert first.messages == [{"role": "system", "content": the_prompt()},
                              {"role": "user", "content": f"{transcript}\n\nCustomer:"}]
    assert not first.continue_final_message
    assert [m.content for m in messages if m.role == "user"] == ["I need a task called 'Important Meeting' for user_1."]
    assert episode.termination == "user_stop", "a stop signal after the label still ends the episode"


async def test_a_oneshot_user_gets_taus_chat_with_an_example_customer_turn(tau2_spec, store):
    episode, messages, _, (first, second) = await run(tau2_spec, store, "oneshot", [
        text("Customer: I'd like a task called 'Important Meeting' for user_1.\nAgent: Done."),
        text("Great, thanks! ###TRANSFER###")])
    assert first.messages == [{"role": "system", "content": f"{the_prompt()}\n\n{ONESHOT_EXAMPLE}"},
                              {"role": "user", "content": GREETING}]
    assert not first.continue_final_message and first.tools is None and first.extra == STOP_AT_AGENT
    assert second.messages[1:] == [
        {"role": "user", "content": GREETING},
        {"role": "assistant", "content": "I'd like a task called 'Important Meeting' for user_1."},
        {"role": "user", "content": "I created the task 'Important Meeting' for user_1."}], "role-flipped, as τ²'s own"
    assert [m.content for m in messages if m.role == "user"][-1] == "Great, thanks!"
    assert episode.termination == "transfer"


async def test_taus_own_framing_is_unchanged(tau2_spec, store):
    episode, _, _, (first, _) = await run(tau2_spec, store, "instructed", [
        text("Customer: please create a task called 'Important Meeting' for user_1."), text("###STOP###")])
    assert first.messages == [{"role": "system", "content": the_prompt()}, {"role": "user", "content": GREETING}]
    assert not first.continue_final_message and first.extra == {}
    assert episode.termination == "user_stop"


async def test_a_oneshot_telecom_user_keeps_its_phone_tools(tau2_spec, store):
    d = domain("telecom")
    u_requests = []
    user = scripted([text("My phone has no service. ###STOP###")], u_requests)
    assistant = scripted([], [])
    scenario = tau2_spec(domain="telecom", tasks={"split": "small", "limit": 1}, user_modes=["oneshot"])
    await run_scenario(scenario, store, backends={"assistant": assistant, "user": user}, show_progress=False)
    assert u_requests[0].tools == d.user_tools
    assert u_requests[0].messages[0]["content"].endswith(ONESHOT_EXAMPLE)


def test_where_a_framing_cannot_run_it_is_refused_before_any_model_call(tau2_spec, tmp_path):
    (tmp_path / "prompts" / "plain.md").write_text("You are a customer.")
    for mode in ("transcript", "oneshot"):
        with pytest.raises(SpecError, match="user_prompt_file.*lacks the slot"):
            tau2_spec(user_modes=[mode], user_prompt_file="prompts/plain.md")
    with pytest.raises(SpecError, match="user_modes.*transcript user cannot call tools"):
        tau2_spec(domain="telecom", user_modes=["transcript"])
    with pytest.raises(SpecError, match="user_modes"):
        tau2_spec(user_modes=["chatty"])
    with pytest.raises(SpecError, match="user_modes.*framework tau2") as refused:
        preflight(tau2_spec(user_modes=["transcript"]), "tau2")
    assert "role-flipped chat only" in str(refused.value) and "continue the chat template" not in str(refused.value)


@pytest.mark.parametrize(("mode", "reply", "words"), [
    ("transcript", " I want to cancel.\nAgent: Sure.\nCustomer: Thanks.", "I want to cancel."),
    ("transcript", "Agent: How can I help you?", ""),
    ("oneshot", "User: Hi there.", "Hi there."),
    ("oneshot", "Please hurry.\n\nassistant: ok", "Please hurry."),
    ("instructed", "Customer: Hi.\nAgent: Hello.", "Customer: Hi.\nAgent: Hello."),
    ("raw", " hi ", " hi "),
])
def test_the_customers_words_are_cut_from_the_reply(mode, reply, words):
    assert customer_words(mode, reply) == words


def test_the_opened_words_start_the_customers_turn():
    assert customer_words("transcript", " I want to cancel.\nAgent: Sure.", "Hi,") == "Hi, I want to cancel."
    assert customer_words("transcript", "", "Hi,") == "Hi,"
