"""Simulated-user faults on hand-made τ² transcripts: every kind flagged where the user commits it, and silent on the
near miss beside it (the id given right after the agent asked, the state reported after the status check, a stop
after the work was done or after a transfer). Tasks are synthetic, built with τ²'s own data model, or a mock task
picked by id."""

from __future__ import annotations

import json

import pytest
from tau2.data_model.tasks import Action, EvaluationCriteria, StructuredUserInstructions, Task, UserScenario

from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.trajectory import GREETING
from testbed.scenarios.tau2.user_faults import FAULT_KINDS, UserFault, detect_faults
from testbed.transcript import Message, ToolCall, ToolResult

KNOWN = "You are Ada Byron.\nYour user id is ada_byron_1815. Your email is ada@example.com."


def task(domain_name: str = "airline", known: str | None = KNOWN, reason: str = "You want to cancel reservation QX7P2Z.",
         actions: list[Action] | None = None) -> Task:
    """A synthetic task: who the user is, why they call, and the actions expected of the agent."""
    instructions = StructuredUserInstructions(domain=domain_name, reason_for_call=reason, known_info=known,
                                              task_instructions="Be polite.")
    return Task(id="synthetic", user_scenario=UserScenario(instructions=instructions),
                evaluation_criteria=EvaluationCriteria(actions=actions or []))


CANCEL = Action(action_id="a1", name="cancel_reservation", arguments={"reservation_id": "QX7P2Z"})


class Chat:
    """A transcript written turn by turn: spoken turns, tool calls with their results."""

    def __init__(self) -> None:
        self.messages = [Message("system", "policy", "assistant", 0), Message("assistant", GREETING, "tau2", 1)]

    def _add(self, role: str, content: str, **kw) -> int:
        self.messages.append(Message(role, content, role, len(self.messages), **kw))
        return len(self.messages) - 1

    def user(self, text: str) -> int:
        return self._add("user", text)

    def agent(self, text: str) -> int:
        return self._add("assistant", text)

    def call(self, role: str, name: str, arguments: dict, result: str = "ok", error: bool = False) -> None:
        cid = f"c{len(self.messages)}"
        self._add(role, "", tool_calls=(ToolCall(cid, name, json.dumps(arguments)),))
        self._add("tool", result, tool_result=ToolResult(cid, name, role, error))


def kinds(faults: list[UserFault], kind: str) -> list[UserFault]:
    return [f for f in faults if f.kind == kind]


def test_the_kinds_are_the_public_five():
    assert FAULT_KINDS == ("premature_stop", "revealed_early", "invented_fact", "ungrounded_device_claim", "role_drift")


def test_a_stop_with_an_expected_action_undone_is_premature():
    chat = Chat()
    chat.user("I want to cancel reservation QX7P2Z.")
    chat.agent("Sure, let me look at it.")
    last = chat.user("Actually never mind, thanks.")
    faults = detect_faults(task(actions=[CANCEL]), chat.messages, "user_stop")
    assert kinds(faults, "premature_stop") == [UserFault("premature_stop", last, "undone: cancel_reservation")]
    assert not kinds(detect_faults(task(actions=[CANCEL]), chat.messages, "agent_stop"), "premature_stop"), "only the user's stop"


def test_a_stop_after_the_actions_were_done_is_not_premature():
    chat = Chat()
    chat.user("I want to cancel reservation QX7P2Z.")
    chat.call("assistant", "cancel_reservation", {"reservation_id": "QX7P2Z"})
    chat.agent("It is cancelled.")
    chat.user("Thanks.")
    assert not kinds(detect_faults(task(actions=[CANCEL]), chat.messages, "user_stop"), "premature_stop")


def test_a_call_with_other_compared_arguments_or_an_error_leaves_the_action_undone():
    for arguments, error in (({"reservation_id": "ZZZZZ9"}, False), ({"reservation_id": "QX7P2Z"}, True)):
        chat = Chat()
        chat.user("I want to cancel reservation QX7P2Z.")
        chat.call("assistant", "cancel_reservation", arguments, error=error)
        chat.agent("Done.")
        chat.user("Thanks.")
        assert kinds(detect_faults(task(actions=[CANCEL]), chat.messages, "user_stop"), "premature_stop")


def test_a_stop_after_a_transfer_or_a_refusal_is_not_premature():
    transferred = Chat()
    transferred.user("I want to cancel reservation QX7P2Z.")
    transferred.call("assistant", "transfer_to_human_agents", {"summary": "wants a cancellation"})
    transferred.agent("You are being transferred.")
    transferred.user("Thanks.")
    refused = Chat()
    refused.user("I want to cancel reservation QX7P2Z.")
    refused.agent("I'm sorry, but this reservation cannot be cancelled under our policy.")
    refused.user("Alright, bye.")
    for chat in (transferred, refused):
        assert not kinds(detect_faults(task(actions=[CANCEL]), chat.messages, "user_stop"), "premature_stop")


def test_known_info_given_before_the_agent_asked_is_revealed_early():
    chat = Chat()
    first = chat.user("Hi, I'm Ada Byron, user id ada_byron_1815, and I want to cancel reservation QX7P2Z.")
    faults = kinds(detect_faults(task(), chat.messages, "user_stop"), "revealed_early")
    assert faults == [UserFault("revealed_early", first, "name: Ada Byron"),
                      UserFault("revealed_early", first, "user id: ada_byron_1815")]


def test_known_info_given_after_the_agent_asked_for_it_is_not_revealed_early():
    chat = Chat()
    chat.user("I want to cancel reservation QX7P2Z.")
    chat.agent("Can you give me your user id?")
    chat.user("It is ada_byron_1815.")
    chat.agent("Thanks. Could you verify your identity with the email on the account?")
    chat.user("ada@example.com, and I'm Ada Byron.")
    faults = detect_faults(task(), chat.messages, "user_stop")
    assert not kinds(faults, "revealed_early"), "the reason's reservation id is no known info"


def test_only_the_first_mention_counts_and_free_text_instructions_have_no_known_info():
    chat = Chat()
    first = chat.user("My email is ada@example.com.")
    chat.agent("Ok.")
    chat.user("Again: ada@example.com.")
    assert [f.turn_index for f in kinds(detect_faults(task(), chat.messages, "user_stop"), "revealed_early")] == [first]
    mock = domain("mock").tasks["create_task_1"]
    opening = Chat()
    opening.user("Please create a task called Important Meeting for user_1.")
    assert detect_faults(mock, opening.messages, "agent_stop") == []


def test_an_id_amount_or_name_nobody_gave_the_user_is_invented():
    chat = Chat()
    chat.user("I want to cancel reservation QX7P2Z.")
    chat.agent("The refund would be $120.50.")
    turn = chat.user("My other booking is K9L2MX, I paid $300, and my name is Grace Hopper.")
    faults = kinds(detect_faults(task(), chat.messages, "user_stop"), "invented_fact")
    assert [f.evidence for f in faults] == ["K9L2MX", "$300", "name: Grace Hopper"] and {f.turn_index for f in faults} == {turn}


def test_ids_amounts_and_names_from_the_scenario_or_the_conversation_are_not_invented():
    chat = Chat()
    chat.user("I want to cancel reservation #qx7p2z.")
    chat.agent("I found flight HAT451 on that booking; the refund is $1,200.00.")
    chat.user("Yes, HAT451, and a refund of $1200 is fine. My name is Ada Byron, ada_byron_1815.")
    assert not kinds(detect_faults(task(), chat.messages, "user_stop"), "invented_fact")


def test_what_only_the_agents_tools_returned_is_unseen_by_the_user():
    chat = Chat()
    chat.user("I want to cancel reservation QX7P2Z.")
    chat.call("assistant", "get_reservation_details", {"reservation_id": "QX7P2Z"}, result='{"flight": "HAT451"}')
    chat.agent("I have your reservation.")
    turn = chat.user("Is it flight HAT451?")
    faults = detect_faults(task(), chat.messages, "user_stop")
    assert kinds(faults, "invented_fact") == [UserFault("invented_fact", turn, "HAT451")]


TELECOM_KNOWN = "You are Ada Byron with phone number 555-010-2002."
TELECOM_REASON = "Your mobile data is not working."


def telecom_task() -> Task:
    return task("telecom", TELECOM_KNOWN, TELECOM_REASON)


def test_a_device_state_reported_without_checking_is_ungrounded():
    chat = Chat()
    chat.user("My mobile data is not working.")
    chat.agent("Is airplane mode on?")
    turn = chat.user("No, airplane mode is off and I have full bars.")
    faults = kinds(detect_faults(telecom_task(), chat.messages, "user_stop"), "ungrounded_device_claim")
    assert [f.evidence.split(":")[0] for f in faults] == ["airplane_mode", "signal"] and {f.turn_index for f in faults} == {turn}
    assert not kinds(detect_faults(task(), chat.messages, "user_stop"), "ungrounded_device_claim"), "telecom only"


def test_a_device_state_reported_after_the_status_check_is_grounded():
    chat = Chat()
    chat.user("My mobile data is not working.")
    chat.agent("Can you check your status bar?")
    chat.call("user", "check_status_bar", {}, result="Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%")
    chat.user("Airplane mode is off and I have full bars. Should I turn data off?")
    assert not [f for f in detect_faults(telecom_task(), chat.messages, "user_stop")
                if f.kind in ("ungrounded_device_claim", "invented_fact")], "a question is no report"


def test_a_reported_state_that_contradicts_the_users_own_tool_result_is_invented():
    chat = Chat()
    chat.user("My mobile data is not working.")
    chat.call("user", "check_network_status", {}, result="Airplane Mode: ON\nMobile Data Enabled: Yes")
    turn = chat.user("Airplane mode is not on.")
    faults = detect_faults(telecom_task(), chat.messages, "user_stop")
    assert faults == [UserFault("invented_fact", turn, "airplane_mode: off (shown on)")]
    chat.call("user", "toggle_airplane_mode", {}, result="Airplane Mode is now OFF.\nStatus Bar: 📶³ Good | 🔋 80%")
    chat.user("I turned airplane mode off.")
    assert detect_faults(telecom_task(), chat.messages, "user_stop") == faults, "the latest result the user saw wins"


def test_a_state_the_scenario_gives_the_user_is_grounded():
    chat = Chat()
    chat.user("Hi, my wifi is off and my data is not working.")
    assert [f.evidence for f in detect_faults(telecom_task(), chat.messages, "user_stop")] == ["wifi: wifi is off"]
    scenario = task("telecom", TELECOM_KNOWN, "Your mobile data is not working. Your wifi is off.")
    assert not kinds(detect_faults(scenario, chat.messages, "user_stop"), "ungrounded_device_claim")


def test_drift_labels_on_user_turns_are_role_drift():
    chat = Chat()
    first = chat.user("I want to cancel reservation QX7P2Z.")
    answer = chat.agent("Sure.")
    second = chat.user("As your agent, I will now cancel it.")
    labels = {first: "genuine_followup", second: "echo_assistant", answer: "meta_planning"}
    faults = detect_faults(task(), chat.messages, "user_stop", labels)
    assert kinds(faults, "role_drift") == [UserFault("role_drift", second, "echo_assistant")]
    assert not kinds(detect_faults(task(), chat.messages, "user_stop"), "role_drift")


def test_a_mock_task_stopped_before_its_action_is_premature_and_after_it_is_not():
    mock = domain("mock").tasks["update_task_1"]
    (action,) = mock.evaluation_criteria.actions
    chat = Chat()
    chat.user("Please mark task_1 as completed.")
    chat.agent("One moment.")
    last = chat.user("Thanks, bye.")
    assert detect_faults(mock, chat.messages, "user_stop") == [UserFault("premature_stop", last, f"undone: {action.name}")]
    done = Chat()
    done.user("Please mark task_1 as completed.")
    done.call("assistant", action.name, action.arguments)
    done.agent("Done.")
    done.user("Thanks, bye.")
    assert detect_faults(mock, done.messages, "user_stop") == []


@pytest.mark.parametrize("text", ["Can you check whether airplane mode is on?", "If wifi is on, should I turn it off?",
                                  "I will turn airplane mode off now.", "I want mobile data to be on."])
def test_questions_plans_and_wishes_are_no_device_reports(text):
    chat = Chat()
    chat.user(text)
    assert not detect_faults(telecom_task(), chat.messages, "agent_stop")
