"""A scripted τ² mock-domain pair whose one episode has simulated-user faults and whose other is clean.

The stopping user (task STOPPED) invents a ticket code (INVENTED) and stops before anything is done:
an invented fact, then a premature stop. The other user (task DONE) asks, the assistant makes the
task's expected calls and says its final words, and the user stops: no fault. The expected calls
and words are read from the installed τ² package at run time.
"""

from __future__ import annotations

from pathlib import Path

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


async def faulty_run(folder: Path, store, temperatures: tuple[float, ...] = (0.0,), model: str = "m") -> tuple[str, Path]:
    """Run the pair (tasks STOPPED and DONE, once per user temperature) into `store` with scripted models named
    `model`; the run id and the scenario spec written in `folder`."""
    from helpers import REPO, write_yaml
    from testbed.backends.base import Capabilities
    from testbed.backends.scripted import ScriptedBackend
    from testbed.running.runner import run_scenario
    from testbed.specs.loader import load_scenario

    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": model, "outputs": ["x"]})
    spec = write_yaml(folder / "t.yaml", {"kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [STOPPED, DONE]},
                                          "assistant": "scripted.yaml", "user": "scripted.yaml",
                                          "temperatures": list(temperatures), "max_tokens": 32, "max_steps": 20})
    backends = {"assistant": ScriptedBackend(assistant_reply, capabilities=Capabilities(continue_user_turn=True)),
                "user": ScriptedBackend(user_reply, capabilities=Capabilities(continue_user_turn=True))}
    summary = await run_scenario(load_scenario(spec), store, backends=backends, show_progress=False)
    return summary.run_id, spec
