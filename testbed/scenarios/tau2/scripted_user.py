"""A τ² user that is not a model: a goal-following script built from the task, the baseline that isolates the agent.

A model user can fail the agent (it speaks as the agent, forgets its goal, stops early); the scripted user cannot,
so the reward an assistant earns against it is the agent's alone, and the gap to the reward against a model user
on the same tasks is what the simulator costs (testbed.analysis.tau2.simulator_gap). It follows τ²'s user
scenario, turned into the first person:

- its first turn (or one after the agent asks how it can help) states the request: the reason for the call (the
  whole instructions for a task whose instructions are one text) and the information it knows;
- an agent turn that matches a conditional instruction (`If the agent says X, mention Y`) by keywords gets Y;
- an agent turn that reports the work done or asks whether there is anything else gets `###STOP###`, and one that
  transfers the customer gets `###TRANSFER###`;
- a question that asks for permission (and for nothing else) gets "Yes, please go ahead."; one asking for something
  it knows (a known fact, a line of the task instructions, by keywords) gets those facts, one about what it does not
  know gets that ("I do not remember my email address"), anything else "I don't know.";
- any other turn gets "Please go ahead.";
- after three fruitless turns in a row ("Please go ahead.", "I don't know."), it gives up with `###STOP###`.

Its reply depends only on the agent's last words and its own earlier turns (the user turns of a task's message
history are not its own), so the same script answers the native loop (ScriptedGoalUser), an agent framework's model
client (testbed.scenarios.tau2.scripted_user_server) and τ²'s own orchestrator (testbed.scenarios.tau2.scripted_user_tau2)
alike. It has no phone: telecom is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from testbed.backends.base import Backend
from testbed.loop.participants import TurnSampling
from testbed.specs.loader import ResolvedAgent
from testbed.transcript import Message, Transcript, Usage, is_assistant, is_user

STOP, TRANSFER = "###STOP###", "###TRANSFER###"
"""τ²'s user signals: the conversation is over (done, or given up), or the customer was transferred to a human."""
DONT_KNOW = "I don't know."
"""The answer to a question the task gives the customer nothing for."""
GO_AHEAD = "Yes, please go ahead."
"""The answer to a request for permission or confirmation."""
CARRY_ON = "Please go ahead."
"""The answer to a turn that neither asks nor reports the work done."""
FRUITLESS = (CARRY_ON, DONT_KNOW)
"""Replies that move nothing forward: the agent neither asked for something the customer knows nor reported done."""
PATIENCE = 3
"""Fruitless replies in a row after which the customer gives up (`###STOP###`), as a customer whose agent goes in
circles would, instead of waiting out the step limit."""
BACKEND = "tau2-scripted"
"""The backend name an agent spec gives to seat the scripted user (agents/tau2-scripted-user.yaml)."""
SCRIPTED_USER_AGENT = "tau2-scripted-user"
"""The built-in agent spec that seats it (what `testbed compare --simulator-gap` adds beside a model user)."""
SCRIPTED_USER_MODEL = BACKEND
"""The user model its episodes are stored under, whatever its agent spec is named, so a report finds them."""

_WORD = re.compile(r"[a-z0-9_#@.\-]+")
_STOPWORDS = frozenset("""
a an the and or but if then than that this these those is are was were be been being am do does did done have has had
i me my mine we our you your yours he she it its they them their to of in on at for from with by about as into
can could would should will shall may might must please let know tell say said says mention ask asks asked
agent service representative customer user yes no not any some what which who whom whose when where why how
there here so just also only very more most all each both like want need one get got go going help assist today
""".split())
_PERSON = [(r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byou were\b", "I was"), (r"\byou have\b", "I have"),
           (r"\byou've\b", "I've"), (r"\byou'd\b", "I'd"), (r"\byou will\b", "I will"), (r"\byourself\b", "myself"),
           (r"\byours\b", "mine"), (r"\byour\b", "my"),
           (r"\b(to|for|with|told|tell|asks|ask|gives|give|at|help|helps) you\b", r"\1 me"), (r"\byou\b", "I")]
_DONE = re.compile(r"\b(anything else|something else|else i can|else can i|further assist|all set|successfully|"
                   r"has been|have been|is now|are now|completed|done|i(?:'ve| have) (?:\w+ )?(?:created|updated|"
                   r"cancell?ed|booked|changed|modified|processed|exchanged|returned|marked|sent|issued|added|removed)|"
                   r"have a (?:great|good|nice))\b")
_TRANSFER = re.compile(r"\btransferr?(?:ed|ing)?\b.*\b(human|agent|representative|specialist)\b|\bplease hold on\b")
_PERMISSION = re.compile(r"\b(shall i|should i|do you want me to|would you like me to|may i proceed|can i proceed|"
                         r"proceed|go ahead|confirm|is that correct|is this correct|are you sure|do you agree|"
                         r"is that right|would you like to)\b")
_ASKS_FOR = re.compile(r"\b(what|which|who|when|where|how many|how much|provide|give me|tell me|may i have|can i have|"
                       r"could i have|share|spell)\b")
_HOW_CAN_I_HELP = re.compile(r"\bhow (?:can|may) i (?:help|assist)\b|\bwhat can i (?:do|help)\b")
_CONDITION = re.compile(r"^\s*if\s+(.+?),\s*(.+)$", re.IGNORECASE | re.DOTALL)
_TELL_THAT = re.compile(r"^(?:then\s+)?(?:mention|say|tell (?:them|the agent)|explain|reply|respond|insist)"
                        r"(?: to the agent)?(?: that)?\s+", re.IGNORECASE)


def first_person(text: str) -> str:
    """The task's second-person instructions ("You are Emma Kim. Your user id is …") as the customer says them."""
    out = text
    for pattern, repl in _PERSON:
        out = re.sub(pattern, repl, out)
        out = re.sub(pattern.replace(r"\by", r"\bY"), lambda m, r=repl: m.expand(r)[:1].upper() + m.expand(r)[1:], out)
    return out


def keywords(text: str) -> frozenset[str]:
    """The content words of `text`, lowercased, plural `s` dropped: what a question and a fact must share to match."""
    words = (w.strip(".-") for w in _WORD.findall(text.lower()))
    stems = (w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)
    return frozenset(w for w in stems if w and w not in _STOPWORDS)


def sentences(text: str | None) -> list[str]:
    """`text` cut into sentences (and paragraphs), each on one line; blank ones dropped (a lone `.`, which some tasks'
    instructions are, too)."""
    parts = re.split(r"(?<=[.!?])\s+|\n\s*\n", text or "")
    return [" ".join(p.split()) for p in parts if len(p.strip()) > 1]


@dataclass(frozen=True)
class Fact:
    """One thing the customer can say, and the words of a question it answers."""

    text: str
    words: frozenset[str]

    @classmethod
    def of(cls, sentence: str) -> "Fact":
        """A fact from one instruction sentence; "You are NAME" also answers a question about the name."""
        extra = {"name"} if re.match(r"^\s*[Yy]ou are [A-Z]", sentence) else set()
        return cls(first_person(sentence), keywords(sentence) | extra)


@dataclass(frozen=True)
class Rule:
    """A conditional instruction: when the agent's words match `words`, the customer says `reply`."""

    words: frozenset[str]
    reply: str


@dataclass(frozen=True)
class UserScript:
    """What the scripted user knows of its task, and how it answers (see the module's docstring)."""

    request: str
    facts: tuple[Fact, ...] = ()
    unknown: tuple[Fact, ...] = ()
    rules: tuple[Rule, ...] = ()

    @classmethod
    def of(cls, task: Any) -> "UserScript":
        """The script of a τ² task, from its user scenario's instructions (structured, or one text)."""
        instructions = task.user_scenario.instructions
        if isinstance(instructions, str):
            reason, known, unknown, steps = instructions, "", "", ""
        else:
            reason, known = instructions.reason_for_call or "", instructions.known_info or ""
            unknown, steps = instructions.unknown_info or "", instructions.task_instructions or ""
        rules, plain = [], []
        for s in sentences(reason) + sentences(steps):
            condition = _CONDITION.match(s)
            if condition:
                rules.append(Rule(keywords(condition.group(1)), first_person(_TELL_THAT.sub("", condition.group(2)))))
            else:
                plain.append(s)
        stated = [first_person(s) for s in sentences(reason) if not _CONDITION.match(s)] + \
                 [first_person(s) for s in sentences(known)]
        facts = [Fact.of(s) for s in sentences(known)] + [Fact.of(s) for s in plain]
        return cls(" ".join(stated) or first_person(str(instructions)), tuple(facts),
                   tuple(Fact.of(s) for s in sentences(unknown)), tuple(rules))

    def reply(self, heard: str, said: Sequence[str] = ()) -> str:
        """The customer's answer to the agent's last words `heard`, after its own earlier turns `said` (none yet: it
        states its request); after PATIENCE fruitless turns in a row it gives up with `###STOP###`."""
        answer = self._answer(heard, bool(said))
        if answer in FRUITLESS and len(said) >= PATIENCE and all(s in FRUITLESS for s in said[-PATIENCE:]):
            return STOP
        return answer

    def _answer(self, heard: str, spoken: bool) -> str:
        """The answer before patience is counted (the rules in the module's docstring, in that order)."""
        text = heard.lower()
        if not spoken or _HOW_CAN_I_HELP.search(text) and not _DONE.search(text):
            return self.request
        if _TRANSFER.search(text):
            return TRANSFER
        words = keywords(heard)
        rule = max(self.rules, key=lambda r: len(r.words & words), default=None)
        if rule is not None and len(rule.words & words) >= max(2, (len(rule.words) + 1) // 2):
            return rule.reply
        asking = "?" in heard
        if _DONE.search(text) and (not asking or re.search(r"anything else|something else|else i can|else can i|"
                                                            r"further assist", text)):
            return STOP
        if not asking:
            return CARRY_ON
        if _PERMISSION.search(text) and not _ASKS_FOR.search(text):
            return GO_AHEAD
        known = [f.text for f in self.facts if f.words & words]
        missing = [f.text for f in self.unknown if f.words & words]
        if known or missing:
            return " ".join(dict.fromkeys(known + missing))
        return GO_AHEAD if _PERMISSION.search(text) else DONT_KNOW


def conversation_so_far(transcript: Transcript, speaker: str) -> tuple[str, list[str]]:
    """The agent's last spoken words, and what the scripted user (`speaker`) has said so far: the user turns of a
    task's message history are not its own, so after them it still states its request."""
    said = [m for m in transcript.dialogue() if m.content]
    heard = next((m.content for m in reversed(said) if is_assistant(m)), "")
    return heard, [m.content for m in said if is_user(m) and m.speaker == speaker]


@dataclass
class ScriptedGoalUser:
    """The scripted user as the native loop's participant: the same interface as GoalUser (`respond`), no model.

    `backend` is the episode's route on the scripted-user endpoint (ScriptedUserBackend.for_script), which an agent
    framework's model client is pointed at; the native loop never calls it. `prompt` is the τ² user prompt a model
    user would have had, kept so a framework's pair reads as for any user.
    """

    agent: ResolvedAgent
    backend: Backend
    script: UserScript
    mode: str
    prompt: str
    sampling: TurnSampling
    tools: list[dict[str, Any]] = field(default_factory=list)

    def derive(self, **changes) -> "ScriptedGoalUser":
        """The same user with some fields changed (the wire recorder's route, which it does not take)."""
        return replace(self, **changes)

    async def respond(self, transcript: Transcript) -> Message:
        """The customer's next turn, from the script."""
        heard, said = conversation_so_far(transcript, self.agent.spec.name)
        return Message("user", self.script.reply(heard, said), self.agent.spec.name, transcript.next_turn,
                       {"mode": self.mode, "scripted": True}, Usage(), "stop")
