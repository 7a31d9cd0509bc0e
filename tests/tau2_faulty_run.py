"""A scripted τ² mock-domain pair whose one episode has simulated-user faults and whose other is clean.

The stopping user (task STOPPED) invents a ticket code (INVENTED) and stops before anything is done:
an invented fact, then a premature stop. The other user (task DONE) asks, the assistant makes the
task's expected calls and says its final words, and the user stops: no fault. The expected calls
and words are read from the installed τ² package at run time.
"""

from __future__ import annotations

from testbed.backends.base import Completion
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.oracle import expected_calls, final_words
from testbed.transcript import Usage

STOPPED, DONE = "create_task_1", "update_task_1"
INVENTED = "ZX9Y8W"
OTHER_USER = "Please mark task_1 as completed."


def text(words: str) -> Completion:
    """A scripted text reply."""
    return Completion(words, "stop", Usage(5, 5))


def user_reply(request) -> Completion:
    """The stopping user invents a ticket code and stops before anything is done; the other asks, then stops."""
    stopping = str(domain("mock").tasks[STOPPED].user_scenario.instructions) in request.messages[0]["content"]
    if len(request.messages) <= 2:
        return text(f"Please create the meeting task for user_1, ticket {INVENTED}." if stopping else OTHER_USER)
    return text("Thanks. ###STOP###")


def assistant_reply(request) -> Completion:
    """The oracle's calls and words for the task that gets done; a bare acknowledgement for the other."""
    if any(INVENTED in (m.get("content") or "") for m in request.messages):
        return text("Noted.")
    task = domain("mock").tasks[DONE]
    if request.messages[-1]["role"] == "tool":
        return text(final_words(task).replace("###STOP###", ""))
    return Completion("", "tool_calls", Usage(5, 5), tool_calls=tuple(expected_calls(task)))
