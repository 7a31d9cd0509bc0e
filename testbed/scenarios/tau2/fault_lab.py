"""The fault-injection lab's instruments: a procedural assistant and a discreet scripted user, as scripted backends.

**Lab instruments, not agents or users to measure.** They exist so that the lab (benchmarks/fault_lab.py) has
multi-turn τ² episodes in every domain on a CPU, with turns whose position is known in advance, into which a
`FaultyUser` (testbed.scenarios.tau2.fault_injection) plants faults. Neither says anything about how well a model
plays either side; seat a model for that.

- `LabAssistant` follows one procedure on every task: after τ²'s greeting and the user's request it asks the user to
  identify itself (naming every kind of detail: name, user id, email, zip, phone, order, reservation, payment), then
  opens a case with a reference it makes up and asks one open question, then asks for confirmation, then works through
  the task's expected actions in order (its own as tool calls; the user's, in telecom, by asking the user to run the
  phone tool with the action's arguments), then reports the work done with what the task says to communicate and asks
  whether there is anything else. An episode whose plan is a stop after a transfer or a refusal
  (`near_stop_after_transfer`, `near_stop_after_refusal`) gets a transfer (τ²'s `transfer_to_human_agents`) or a
  refusal in place of the confirmation question. It knows each episode's task and plan by the episode's id.
- `LabUser` is the scripted goal-following user (testbed.scenarios.tau2.scripted_user) made discreet and given hands:
  its request is the reason for the call only (the scripted user volunteers its known info at once, a fault by τ²'s
  guidelines, which would flag every clean episode), and in telecom it runs the phone tool the lab assistant names
  with the arguments given, then says it did. It is the backend of a GoalUser, so the episode runs like a model
  user's; it finds its task by the scenario in its prompt.

With them, a clean episode's user turns are: 1 the request, 2 its details, 3 an answer to the open question, 4 the
confirmation, then one turn per action of the user's own (telecom), then the stop (`LAB_TURNS`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from testbed.backends.base import Capabilities, Completion, GenerateRequest
from testbed.frameworks.tool_desk import AGENT_SIGNAL
from testbed.scenarios.tau2.fault_injection import FaultPlan, expected_actions
from testbed.scenarios.tau2.scripted_user import UserScript, first_person, sentences
from testbed.transcript import ASSISTANT, TOOL, USER, ToolCall, Usage

IDENTIFY = ("Thanks. Before I look into it, could you verify your identity? Please give me your name, user id, email, "
            "zip code and phone number, and any order, reservation or payment ids this is about.")
OPEN_QUESTION = "Thank you. I have opened case {ref} for this. What else should I note about your request?"
CONFIRM = "I am ready to make the changes your request needs. Shall I proceed?"
REFUSE = "I'm sorry, but I cannot make that change; it is against our policy."
TRANSFERRED = "I have transferred you to a human agent. Please hold on."
RUN_ON_PHONE = "On your phone, please run {name} with {arguments}"
DONE = "All done. {info}Is there anything else I can help you with?"
CLOSING = f"Thank you for contacting us. {AGENT_SIGNAL}"
TRANSFER_TOOL = "transfer_to_human_agents"
LAB_TURNS = {"request": 1, "details": 2, "open_question": 3, "confirmation": 4}
"""The user turn (ordinal) at which a clean lab episode's user says each thing; `stop_turn` gives the last."""
_RUN = re.compile(r"please run (\w+) with ")
_USAGE = Usage(1, 1)


def stop_turn(task: Any) -> int:
    """The user turn at which a clean lab episode's user stops: after the confirmation and its own actions."""
    return LAB_TURNS["confirmation"] + 1 + sum(1 for a in expected_actions(task) if a.requestor == "user")


def case_reference(episode_id: str) -> str:
    """The case reference the lab assistant makes up for an episode: a letter and six digits, stable per episode."""
    return "C" + str(int(hashlib.sha256(episode_id.encode()).hexdigest()[:8], 16) % 900000 + 100000)


def _text(words: str) -> Completion:
    return Completion(words, "stop", _USAGE)


def lab_script(task: Any, plan: FaultPlan | None, episode_id: str) -> list[Completion]:
    """The lab assistant's replies in one episode, in order (see the module's docstring)."""
    out = [_text(IDENTIFY), _text(OPEN_QUESTION.format(ref=case_reference(episode_id)))]
    kind = plan.kind if plan is not None else None
    if kind == "near_stop_after_refusal":
        return out + [_text(REFUSE), _text(CLOSING)]
    if kind == "near_stop_after_transfer":
        call = ToolCall("lab_transfer", TRANSFER_TOOL, json.dumps({"summary": "The customer asked for a human agent."}))
        return out + [Completion("", "tool_calls", _USAGE, tool_calls=(call,)), _text(TRANSFERRED), _text(CLOSING)]
    out.append(_text(CONFIRM))
    for i, action in enumerate(expected_actions(task)):
        arguments = json.dumps(action.arguments)
        if action.requestor == "user":
            out.append(_text(RUN_ON_PHONE.format(name=action.name, arguments=arguments)))
        else:
            out.append(Completion("", "tool_calls", _USAGE, tool_calls=(ToolCall(f"lab_{i}", action.name, arguments),)))
    criteria = task.evaluation_criteria
    info = " ".join(f"{i}." for i in ((criteria.communicate_info or []) if criteria is not None else []))
    return out + [_text(DONE.format(info=f"{info} " if info else "")), _text(CLOSING)]


class LabAssistant:
    """The lab's procedural assistant as a backend (see the module's docstring): `episodes` maps each episode id to its
    task and plan. A lab instrument, not an agent to measure."""

    name = "fault-lab"
    model = "fault-lab-assistant"
    capabilities = Capabilities(continue_user_turn=True)

    def __init__(self, episodes: Mapping[str, tuple[Any, FaultPlan | None]]):
        self._episodes = dict(episodes)
        self._scripts: dict[str, list[Completion]] = {}

    async def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to close."""

    async def generate(self, request: GenerateRequest) -> Completion:
        """The episode's next reply by the procedure; the closing words once it has run out."""
        episode = str(request.conversation)
        if episode not in self._scripts:
            task, plan = self._episodes[episode]
            self._scripts[episode] = lab_script(task, plan, episode)
        script = self._scripts[episode]
        return script.pop(0) if script else _text(CLOSING)


def discreet_script(task: Any) -> UserScript:
    """The scripted user's script with its request cut to the reason for the call: it gives its details when asked."""
    script = UserScript.of(task)
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return script
    reason = " ".join(first_person(s) for s in sentences(instructions.reason_for_call) if not s.lower().startswith("if "))
    return replace(script, request=reason or script.request)


class LabUser:
    """The lab's discreet scripted user with hands, as a GoalUser's backend (see the module's docstring): `tasks` are the
    tasks it may be asked to play, found by the user scenario in the request's prompt. A lab instrument, not a user to
    measure agents with."""

    name = "fault-lab"
    model = "fault-lab-user"
    capabilities = Capabilities(continue_user_turn=True)

    def __init__(self, tasks: Iterable[Any]):
        self._tasks = {str(t.user_scenario): t for t in tasks}
        self._scripts: dict[str, UserScript] = {}

    async def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to close."""

    def _task(self, prompt: str) -> Any:
        for scenario, task in self._tasks.items():
            if scenario in prompt:
                return task
        raise LookupError("the lab user was asked to play a task it was not given")

    async def generate(self, request: GenerateRequest) -> Completion:
        """The user's next turn, from the role-flipped view (the agent's turns arrive as `user`)."""
        prompt = request.messages[0]["content"]
        if prompt not in self._scripts:
            self._scripts[prompt] = discreet_script(self._task(prompt))
        view = request.messages[1:]
        if view and view[-1]["role"] == TOOL:
            return _text("Okay, it ran fine.")
        heard = next((m["content"] or "" for m in reversed(view) if m["role"] == USER), "")
        run = _RUN.search(heard)
        if run is not None and request.tools:
            arguments, _ = json.JSONDecoder().raw_decode(heard[run.end():])
            call = ToolCall(f"lab_user_{len(view)}", run.group(1), json.dumps(arguments))
            return Completion("", "tool_calls", _USAGE, tool_calls=(call,))
        said = [m["content"] for m in view if m["role"] == ASSISTANT and not m.get("tool_calls") and m["content"]]
        return _text(self._scripts[prompt].reply(heard, said))

