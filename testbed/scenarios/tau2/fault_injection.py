"""Planted simulated-user faults with known answers: the fault-injection lab's faults, its near misses, and the user
that plants one of them at a chosen user turn around any τ² user.

A rule that flags simulated-user faults (testbed.scenarios.tau2.user_faults) can only be trusted as far as its error
is measured, and real transcripts rarely show the faults. `FaultyUser` wraps any τ² user (a model GoalUser, the
scripted goal-following user, the lab's own user) and, at the planned user turn, replaces or extends what that user
said with one fault whose kind and turn are known: the lab (benchmarks/fault_lab.py) then counts which rule flags
which planted turn. Each fault names the τ² tag it counts under (testbed.scenarios.tau2.fault_tags) and the rule kind
that should flag it, or none where no rule looks for it yet. Near misses look like a fault to a rule but are none (a
known id given after the agent asked for it, an id the agent said first, a device state the user's own tool call
showed, a stop after the work was done or after the agent transferred or refused): a flag on one is a false positive.

A plan is written `KIND@TURN` (`invented_fact@2`: the user's second spoken turn of the episode; `none`: nothing
planted). Where the plan is carried out, the planted message's sampling records it (`FAULT_KEY`, `FAULT_TURN_KEY`,
`FAULT_DETAIL_KEY`; the store keeps sampling as `sampling_json`), so a stored episode says which of its turns is the
planted one. A plan that cannot be carried out on its task (revealed_early where the instructions hold no known
info, premature_stop on a task with nothing to do, a telecom-only fault elsewhere; the episode ending before the turn)
leaves no record: the lab counts such an episode as not planted.

How a plan shows in an episode's conditions: a τ² scenario's `user_faults` grid (testbed.specs.tau2) puts the plan in
the episode's `perturbation` (`user-fault:invented_fact@2`, `none` when clean), the one condition column every report,
fault frame and comparison already groups by; a τ² episode has no other perturbation, and its id changes only when a
plan is given, so ids of runs made before the field stay.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from typing import Any

from testbed.specs.tau2 import FaultPlan
from testbed.transcript import Message, ToolCall, Transcript, is_assistant, is_tool, is_user

FAULT_KEY, FAULT_TURN_KEY, FAULT_DETAIL_KEY = "user_fault", "user_fault_turn", "user_fault_detail"
"""The keys of a planted message's sampling: the plan's kind, the user turn (1-based ordinal) it was planted on, and
what exactly was said or done (the invented token, the topic claimed)."""
STOP = "###STOP###"


@dataclass(frozen=True)
class Planted:
    """A kind of planted turn: a fault (`tag` is its τ² tag) or a near miss (`tag` None), and the rule it concerns:
    the rule that should flag the fault (None: no rule looks for it), or the rule a near miss tempts."""

    name: str
    tag: str | None
    rule: str | None
    meaning: str
    telecom_only: bool = False

    @property
    def near_miss(self) -> bool:
        """Whether this is a near miss: it looks like a fault to `rule` but is none."""
        return self.tag is None


FAULTS = (
    Planted("premature_stop", "premature_termination", "premature_stop",
            "the user stops with ###STOP### while the task's expected actions are undone"),
    Planted("revealed_early", "revealed_info_early", "revealed_early",
            "the user gives its known details (ids, email, zip, name) before the agent asked for them"),
    Planted("invented_fact", "hallucination", "invented_fact",
            "the user states an id, amount, name or date that neither its instructions nor the conversation hold"),
    Planted("ungrounded_device_claim", "hallucination", "ungrounded_device_claim",
            "the user reports a device state before any tool call of its own showed it", telecom_only=True),
    Planted("answers_as_agent", "guideline_violation", "role_drift", "the user speaks as the agent would"),
    Planted("contradiction", "inconsistent_behavior", None, "the user gives a different value for something it said"),
    Planted("ignores_instruction", "guideline_violation", None,
            "the user refuses what its scenario has it accept (it declines the agent's proposal)"),
)
"""The lab's faults, each with the τ² tag it counts under and the rule kind that should flag it."""
NEAR_MISSES = (
    Planted("near_revealed_after_ask", None, "revealed_early", "the user gives its known details after the agent asked"),
    Planted("near_agent_said_first", None, "invented_fact", "the user repeats an id the agent said first"),
    Planted("near_device_after_check", None, "ungrounded_device_claim",
            "the user checks its status bar, then reports the airplane-mode state it showed", telecom_only=True),
    Planted("near_stop_after_done", None, "premature_stop", "the user stops after the agent reported the work done"),
    Planted("near_stop_after_transfer", None, "premature_stop", "the user stops after the agent transferred it"),
    Planted("near_stop_after_refusal", None, "premature_stop", "the user stops after the agent refused"),
)
"""The lab's near misses, each with the rule it tempts: a flag of that rule on one is a false positive."""
PLANTED = {p.name: p for p in FAULTS + NEAR_MISSES}
"""Every plannable kind by name (the spec's `USER_FAULTS`, testbed.specs.tau2, names the same)."""


def known_details(task: Any) -> str:
    """The user's known info in the first person, as it would give it ("My user id is …"): empty for a task whose
    instructions are one text (τ²'s mock domain) or hold no known info."""
    from testbed.scenarios.tau2.scripted_user import first_person, sentences

    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return ""
    return " ".join(first_person(s) for s in sentences(instructions.known_info))


def expected_actions(task: Any) -> list[Any]:
    """The task's expected actions (either side's), in order."""
    criteria = task.evaluation_criteria
    return list((criteria.actions or []) if criteria is not None else [])


def is_telecom(task: Any) -> bool:
    """Whether the task is telecom's (the user has a phone)."""
    instructions = task.user_scenario.instructions
    return not isinstance(instructions, str) and instructions.domain == "telecom"


def applicable(kind: str, task: Any) -> bool:
    """Whether `kind` can be planted in `task`'s episodes at all: a telecom-only kind needs telecom, revealing or
    repeating known details needs known info, a premature stop needs an expected action left to undo."""
    planted = PLANTED[kind]
    if planted.telecom_only and not is_telecom(task):
        return False
    if kind in ("revealed_early", "near_revealed_after_ask"):
        return bool(known_details(task))
    if kind == "premature_stop":
        return bool(expected_actions(task))
    return True


_ID_LIKE = re.compile(r"#?\b(?=[\w.@-]*\d[\w.@-]*\d)[A-Za-z0-9][\w.@-]*[A-Za-z0-9]\b")
"""An id-like token of at least two digits (an id, an email with digits, a zip, a phone number)."""
_FIRST = ("Quillon", "Marisabel", "Tobiah", "Ysolde", "Caspian", "Odalys", "Fenwick", "Seraphine")
_LAST = ("Vantongeren", "Okonkwo-Reyes", "Halvorsrud", "Pemberton-Kaye", "Zaltsman", "Ibarguen", "Thistlewood")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November")
DEVICE_CLAIMS = (("airplane mode", "Airplane mode is {} on my phone."), ("airplane mode", "My phone is in airplane mode."),
                 ("roaming", "Data roaming is {} on my phone."), ("mobile data", "My mobile data is {}."),
                 ("data saver", "Data saver mode is {} on my phone."), ("signal", "I have no signal bars at all."))
"""The device states an ungrounded claim reports: the words that name the topic in a scenario, and the claim (with an
on/off slot, or in words the rules' patterns may not read: the lab measures which)."""
NAME_SENTENCES = ("My name is {}.", "The account is under {}.")
"""How an invented name is said: as the rules look for it ("my name is"), and as they do not."""
AS_AGENT = ("Thank you for reaching out! I'd be happy to help you with that. Could you please provide your user ID so "
            "I can look up your account?",
            "I understand your concern. Let me check that for you. Is there anything else I can assist you with today?",
            "Certainly! I have processed your request and updated your account. Have a great day!")
"""What a user says when it speaks as the agent."""


def _key(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _knows(task: Any, transcript: Transcript) -> str:
    """Everything the user's rules could call known: its scenario and every message so far."""
    said = [m.content + " " + " ".join(c.arguments for c in m.tool_calls) for m in transcript.messages]
    return " ".join([str(task.user_scenario), *said])


def invented(rng: random.Random, known: str) -> tuple[str, str]:
    """A plausible fact of one shape (id, amount, name, date) that `known` does not hold: the sentence and the fact."""
    keys, words = _key(known), set(re.findall(r"[a-z]+", known.casefold()))
    shape = rng.choice(("id", "amount", "name", "date"))
    for _ in range(100):
        if shape == "id":
            fact = f"{rng.choice('KLMNPQRTVX')}{rng.randrange(100000, 999999)}"
            sentence = f"My reference number is {fact}."
        elif shape == "amount":
            fact = f"${rng.randrange(101, 979)}.{rng.randrange(10, 99)}"
            sentence = f"I was charged {fact} for it."
        elif shape == "name":
            fact = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
            sentence = rng.choice(NAME_SENTENCES).format(fact)
            if not any(part in words for part in re.findall(r"[a-z]+", fact.casefold())):
                return sentence, f"name{'' if sentence.startswith('My name') else '-unmarked'} {fact}"
            continue
        else:
            fact = f"{rng.choice(_MONTHS)} {rng.randrange(2, 28)}, {rng.randrange(2011, 2019)}"
            sentence = f"It started on {fact}."
        if _key(fact) not in keys:
            return sentence, f"{shape} {fact}"
    raise RuntimeError("could not invent a fact the conversation does not hold")


def _joined(words: str, extra: str) -> str:
    words = words.strip()
    if not words:
        return extra
    return f"{words} {extra}" if words[-1] in ".!?" else f"{words}. {extra}"


def spoken_user_turns(transcript: Transcript, speaker: str) -> int:
    """How many spoken turns `speaker` (the user) has taken in the transcript."""
    return sum(1 for m in transcript.messages if is_user(m) and m.spoken and m.speaker == speaker)


@dataclass
class FaultyUser:
    """A τ² user that plants one fault or near miss (`plan`) at a chosen user turn and is `inner` at every other turn.

    It has the interface of the user it wraps (`respond`, `derive`, and the fields a framework's pair reads), so the
    episode runs as before; only the native loop asks a user for its turns (frameworks talk to its backend), so only
    there is the plan carried out. `seed` fixes what a fault invents.
    """

    inner: Any
    task: Any
    plan: FaultPlan
    seed: int = 0
    _checking: bool = field(default=False, init=False, repr=False)
    _done: bool = field(default=False, init=False, repr=False)

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "__setstate__") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def derive(self, **changes) -> "FaultyUser":
        """The same planted user around the inner user with some fields changed (a routed backend)."""
        return replace(self, inner=self.inner.derive(**changes))

    @property
    def speaker(self) -> str:
        """The name the user's turns are spoken under."""
        return self.inner.agent.spec.name

    async def respond(self, transcript: Transcript) -> Message:
        """The inner user's turn, or at the planned turn the planted one."""
        ordinal = spoken_user_turns(transcript, self.speaker) + 1
        if self._done or ordinal != self.plan.turn or not applicable(self.plan.kind, self.task):
            return await self.inner.respond(transcript)
        if self.plan.kind == "near_device_after_check":
            return self._check_then_report(transcript, ordinal)
        message = await self.inner.respond(transcript)
        if message.tool_calls:
            return message
        planted = self._planted(transcript, message.content)
        if planted is None:
            return message
        words, detail = planted
        self._done = True
        sampling = {**(message.sampling or {}), FAULT_KEY: self.plan.kind, FAULT_TURN_KEY: ordinal, FAULT_DETAIL_KEY: detail}
        return replace(message, content=words, sampling=sampling)

    def _check_then_report(self, transcript: Transcript, ordinal: int) -> Message:
        """A near miss in two steps: the user checks its status bar, then reports the airplane-mode state shown."""
        last = transcript.messages[-1]
        if not self._checking:
            self._checking = True
            call = ToolCall(f"lab_check_{transcript.next_turn}", "check_status_bar", "{}")
            return Message("user", "", self.speaker, transcript.next_turn, {FAULT_KEY: self.plan.kind, "step": "check"},
                           tool_calls=(call,))
        shown = last.content if is_tool(last) else ""
        bar = shown.split("Status Bar:")[-1]
        state = "on" if re.search(r"airplane mode:?\s*on|✈️|Airplane Mode", bar) else "off"
        self._done = True
        return Message("user", f"I checked my status bar: airplane mode is {state}.", self.speaker, transcript.next_turn,
                       {FAULT_KEY: self.plan.kind, FAULT_TURN_KEY: ordinal, FAULT_DETAIL_KEY: f"airplane_mode {state}"},
                       finish_reason="stop")

    def _planted(self, transcript: Transcript, words: str) -> tuple[str, str] | None:
        """The planted turn's words and what was planted, or None where the plan cannot be carried out here."""
        kind, task = self.plan.kind, self.task
        rng = random.Random(f"{self.seed}:{task.id}:{self.plan.label}")
        known = _knows(task, transcript)
        if kind == "premature_stop":
            return f"Actually, I have to go now. {STOP}", "stop"
        if kind in ("revealed_early", "near_revealed_after_ask"):
            details = known_details(task)
            return (_joined(words, details) if kind == "revealed_early" else details), "known info"
        if kind == "invented_fact":
            sentence, fact = invented(rng, known)
            return _joined(words, sentence), fact
        if kind == "ungrounded_device_claim":
            scenario = str(task.user_scenario).casefold()
            topic, claim = rng.choice([c for c in DEVICE_CLAIMS if c[0] not in scenario] or [DEVICE_CLAIMS[0]])
            state = rng.choice(("on", "off"))
            worded = "" if "{}" in claim else "-worded"
            return _joined(words, claim.format(state)), f"{topic.replace(' ', '_')}{worded} {state}"
        if kind == "answers_as_agent":
            return rng.choice(AS_AGENT), "as agent"
        if kind == "contradiction":
            return self._contradiction(transcript)
        if kind == "ignores_instruction":
            return "No, I don't want that. Please don't change anything.", "declines"
        if kind == "near_agent_said_first":
            heard = next((m.content for m in reversed(transcript.messages) if is_assistant(m) and m.spoken), "")
            scenario = _key(str(task.user_scenario))
            token = next((t for t in _ID_LIKE.findall(heard) if _key(t) not in scenario), None)
            return None if token is None else (f"Yes, {token} is the one I mean.", token)
        return f"Thank you, that's all. {STOP}", "stop"

    def _contradiction(self, transcript: Transcript) -> tuple[str, str]:
        """Another value, already said in the conversation, for an id-like token the user gave before (so the turn
        contradicts without inventing); without two such tokens, a denial of its own request."""
        own = [m.content for m in transcript.messages if is_user(m) and m.spoken and m.speaker == self.speaker]
        tokens = [t for text in own for t in _ID_LIKE.findall(text)]
        said = [t for m in transcript.messages if m.spoken for t in _ID_LIKE.findall(m.content)]
        for token in tokens:
            other = next((t for t in said if _key(t) != _key(token)), None)
            if other is not None:
                return f"Sorry, I got that wrong before: it is {other}, not {token}.", f"{token} -> {other}"
        return "Wait, I never asked for that. That is not what I said at the start.", "denies request"


def plan_record(messages: list[Message]) -> tuple[str, int, int, str] | None:
    """Where a stored episode's plan was carried out: (kind, user-turn ordinal, message turn index, detail), or None
    when no message records one."""
    for m in messages:
        sampling = m.sampling or {}
        if FAULT_TURN_KEY in sampling:
            return sampling[FAULT_KEY], int(sampling[FAULT_TURN_KEY]), m.turn_index, str(sampling.get(FAULT_DETAIL_KEY, ""))
    return None
