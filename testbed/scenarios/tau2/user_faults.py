"""Simulated-user faults in a τ² episode, per user turn, from the transcript, the task and the environment's
tool results alone (no model): whose fault a failed episode was.

τ²'s user guidelines ask the simulated user to disclose information progressively, never to make up
information, and to keep the conversation going until the task is done. Each detector below checks one of
those rules, or the judges' role-drift labels, and is conservative: when a rule cannot be read with
confidence from the text it stays silent, so a flag is evidence and its absence is not proof.

- `premature_stop` (on the user's last spoken turn): the episode ended on the user's stop signal
  (termination `user_stop`) while an expected action of the task (`task.evaluation_criteria.actions`) was
  still undone, and the agent had neither transferred nor refused. An action is done when some tool call
  in the episode that was executed (its result is not an error) matches it the way τ²'s action check
  does (`Action.compare_with_tool_call`: same name, equal compared arguments, any requestor). The agent
  transferred when it called `transfer_to_human_agents`; it refused when one of its last two spoken turns
  says so (`REFUSAL`: "cannot", "unable to", "not allowed", "against policy", "sorry, but" …). A stop right after
  the agent's closing offer ("anything else I can help with?", `CLOSING_OFFER`) is no fault either: the agent
  called the work finished, and the user cannot see whether its tool calls failed (the fault-injection lab found
  such stops flagged on retail tasks whose expected actions fail in τ²'s own environment).
- `revealed_early`: the user says a piece of its *known info* (structured instructions' `known_info`:
  ids, emails, phone numbers, zip codes and other id-like tokens, and the name after "You are …") that no
  earlier assistant turn asked for. Each piece has a kind (user id, email, zip, phone, name, reservation,
  order, payment, or plain id), read from its shape or the words of its sentence; the agent asked for it
  when an earlier spoken assistant turn names that kind (`ASKED`) or, for user id, email, zip, phone and
  name, asks the user to identify or verify themselves (`IDENTITY`). Only a piece's first mention counts.
  Pieces that also occur in the reason for the call are part of stating the reason, never a fault; tasks
  whose instructions are one free text (τ²'s mock domain) have no known info, so nothing is revealed early.
- `invented_fact`: the user states an id-like token (an email, a phone number, a `$` amount, an
  underscore id with a digit, a letter then four digits or more, a 6-character upper-case code with a
  letter and a digit, a number of five digits or more) or a full name after "my name is / I'm / this is"
  that appears nowhere in what it knew: its scenario (persona and instructions), the earlier spoken turns
  of either side, and its own tool calls and results. Tokens compare by their letters and digits only
  (`#W123` = `W123`, `555-123-2002` = `5551232002`), amounts by value. In telecom a reported on/off
  state (airplane mode, mobile data, Wi-Fi, roaming, data saver) that contradicts the latest state the
  user's own tool results showed is an invented fact too.
- `ungrounded_device_claim` (telecom only): a user turn reports a device state (`DEVICE_TOPICS`: airplane
  mode, signal, network type, mobile data, Wi-Fi, roaming, data saver, VPN, SIM) in a sentence that is no
  question, request, plan or condition, before any user tool call that shows that state (the topic's
  tools, or any result carrying the status bar for the states it shows), and the scenario itself does not
  state it. A claim of having switched something ("I turned airplane mode off") is a reported state.
- `role_drift`: a judge labelled the user turn with one of the taxonomy's drift labels (echoing the
  assistant, planning aloud: `taxonomy().drift_labels`); `drift_labels` maps turn index to label.

Evidence is the token or phrase that triggered a flag (an id, a state, the undone actions' tool names),
never the task's text beyond it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from testbed.transcript import Message, is_assistant, is_tool, is_user

FAULT_KINDS = ("premature_stop", "revealed_early", "invented_fact", "ungrounded_device_claim", "role_drift")
"""Every kind of simulated-user fault, in the order reports show them."""
TRANSFER_TOOL = "transfer_to_human_agents"
"""τ²'s tool for handing the user to a human: after it the user may stop with work undone."""
REFUSAL = re.compile(r"\b(?:can ?not|can't|unable to|not able to|won't be able to|not (?:possible|allowed|permitted|eligible)"
                     r"|against (?:our |the )?polic(?:y|ies)|(?:sorry|afraid),? but)\b", re.I)
"""Wording by which an agent declines a request."""
CLOSING_OFFER = re.compile(r"\b(?:anything|something) else\b|\bfurther assist", re.I)
"""Wording by which an agent offers more help once it counts the work finished."""
ASKED = {
    "user id": r"user ?id|customer ?id|account ?id|user ?name",
    "email": r"e-?mail",
    "zip": r"\bzip|postal",
    "phone": r"phone|mobile number|\bnumber\b",
    "name": r"\bname\b",
    "reservation": r"reservation|booking|confirmation",
    "order": r"\border",
    "payment": r"payment|\bcard\b",
    "id": r"\bids?\b|identifier|number|\bcode\b",
}
"""How an agent names each kind of information when it asks for it (case-insensitive)."""
IDENTITY_KINDS = frozenset({"user id", "email", "zip", "phone", "name"})
"""Kinds an agent asks for at once when it asks the user to identify or verify themselves."""
IDENTITY = re.compile(r"identif|authenticat|verif|your account|locate you|look you up|find you", re.I)
"""Wording by which an agent asks the user to identify themselves."""

_ID_TOKEN = re.compile(
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"
    r"|\b\d{3}-\d{3}-\d{4}\b"
    r"|\$\d+(?:,\d{3})*(?:\.\d+)?"
    r"|\b[A-Za-z]+(?:_[A-Za-z0-9]+)*_[A-Za-z]*\d[A-Za-z0-9]*\b"
    r"|#?\b[A-Z]\d{4,}\b"
    r"|\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b"
    r"|\b\d{5,}\b")
_NAME_SAID = re.compile(r"\b(?i:my name is|my name's|this is|i'm|i am)\s+([A-Z][a-z]+(?:[ -][A-Z][a-z]+)+)")
_NAME_KNOWN = re.compile(r"\b(?i:you are|your name is)\s+([A-Z][a-z]+(?:[ -][A-Z][a-z]+)+)")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_NOT_A_REPORT = re.compile(r"\?\s*$|\b(?:can|could|would|should|shall|do|does|did|will) (?:you|i)\b|\bhow (?:do|can|should) i\b"
                           r"|\bplease\b|\blet me\b|\bi'll\b|\bi will\b|\bgoing to\b"
                           r"|\b(?:want(?:s|ed)?|wish|hope|would like|prefer)\b"
                           r"|\btry(?:ing)?\b|\bif\b"
                           r"|\bwhen\b|\bneed to\b|\bshould\b", re.I)


@dataclass(frozen=True)
class UserFault:
    """One fault of the simulated user, on the user turn that carries it."""

    kind: str
    """One of FAULT_KINDS."""
    turn_index: int
    """The user turn's message index (a premature stop: the user's last spoken turn)."""
    evidence: str
    """The token, state or phrase that triggered it, short and safe to show."""


@dataclass(frozen=True)
class DeviceTopic:
    """One kind of device state a telecom user can report, and the user tools whose results show it."""

    name: str
    claims: tuple[re.Pattern, ...]
    """Sentences that report the state; a `state` group, where there is one, holds the reported value."""
    tools: frozenset[str]
    """User tools whose result shows this state."""
    in_status_bar: bool
    """Whether τ²'s status bar (printed after every toggle) shows it."""
    shown: re.Pattern | None = None
    """Reads the on/off value from a tool result (`state` group), for topics whose value can contradict a claim."""


_STATES = r"(?P<state>on|off|enabled|disabled|active|inactive|connected|disconnected)\b(?!\s+(?:my|the|your|this|it)\b)"


def _switch(noun: str) -> tuple[re.Pattern, ...]:
    """Claims about an on/off setting: "<noun> is (not) on", and "I turned off <noun>"."""
    return (re.compile(rf"\b(?:{noun})\W+(?:[\w']+\W+){{0,4}}?{_STATES}", re.I),
            re.compile(rf"\b(?:turned|switched|toggled|put)\s+(?:it\s+)?(?P<state>on|off)\s+(?:the\s+|my\s+)?(?:{noun})", re.I))


DEVICE_TOPICS = (
    DeviceTopic("airplane_mode", _switch("airplane mode|flight mode"),
                frozenset({"check_status_bar", "check_network_status", "toggle_airplane_mode"}), True,
                re.compile(r"airplane mode(?: is now)?:?\s*(?P<state>on|off)\b", re.I)),
    DeviceTopic("signal", (re.compile(r"\bno (?:signal|service|reception|bars)\b|\b(?:\d|zero|one|two|three|four|full) bars?\b"
                                      r"|\bsignal\W+(?:[\w']+\W+){0,3}?(?:none|poor|weak|fair|good|excellent|strong)\b"
                                      r"|\b(?:poor|weak|fair|good|excellent|strong) (?:signal|reception)\b", re.I),),
                frozenset({"check_status_bar", "check_network_status"}), True),
    DeviceTopic("network_type", (re.compile(r"\b(?:on|connected to|shows?|showing|using|stuck on|only)\s+(?:2g|3g|4g|5g|lte)\b"
                                            r"|\bnetwork (?:type|mode|technology)\W+(?:[\w']+\W+){0,2}?"
                                            r"(?:2g|3g|4g|5g|lte|none)\b",
                                            re.I),),
                frozenset({"check_status_bar", "check_network_status", "check_network_mode_preference",
                           "set_network_mode_preference"}), True),
    DeviceTopic("mobile_data", _switch(r"(?:mobile |cellular )?data(?! roaming| saver)"),
                frozenset({"check_status_bar", "check_network_status", "toggle_data"}), True,
                re.compile(r"mobile data(?: enabled| is now)?:?\s*(?P<state>on|off|yes|no)\b"
                           r"|📱 data (?P<bar>enabled)|📵 data (?P<off>disabled)", re.I)),
    DeviceTopic("wifi", _switch(r"wi-?fi(?! calling)"),
                frozenset({"check_wifi_status", "toggle_wifi", "check_network_status"}), True,
                re.compile(r"wi-fi radio:\s*(?P<state>on|off)\b|wi-fi is (?:now )?(?P<now>on|off)\b", re.I)),
    DeviceTopic("roaming", _switch("roaming"), frozenset({"check_network_status", "toggle_roaming"}), False,
                re.compile(r"data roaming(?: enabled| is now)?:?\s*(?P<state>on|off|yes|no)\b", re.I)),
    DeviceTopic("data_saver", _switch("data saver"), frozenset({"check_data_restriction_status", "toggle_data_saver_mode"}), True,
                re.compile(r"data saver mode is (?:now )?(?P<state>on|off)\b", re.I)),
    DeviceTopic("vpn", _switch(r"\bvpn"), frozenset({"check_vpn_status", "connect_vpn", "disconnect_vpn"}), True),
    DeviceTopic("sim", (re.compile(r"\bsim(?: card)?\W+(?:[\w']+\W+){0,3}?"
                                   r"(?:locked|active|missing|not detected|inserted|blocked)\b",
                                   re.I),),
                frozenset({"check_sim_status", "reseat_sim_card", "check_network_status"}), False),
)
"""The device states a telecom user may report, each with the user tools that show it."""
_ON = {"on", "enabled", "active", "connected", "yes"}
_NEGATION = re.compile(r"\bnot\b|n't\b|\bno longer\b", re.I)


def detect_faults(task: Any, messages: list[Message], termination: str,
                  drift_labels: dict[int, str] | None = None) -> list[UserFault]:
    """Every simulated-user fault of one τ² episode (τ² `Task`, its messages in turn order, its stored termination,
    and optionally a judge's label per user turn), in turn order; the module docstring defines each kind."""
    from testbed.judges.taxonomy import taxonomy

    scenario = str(task.user_scenario)
    instructions = task.user_scenario.instructions
    structured = not isinstance(instructions, str)
    telecom = structured and instructions.domain == "telecom"
    pieces = _known_pieces(instructions) if structured else []
    drift = taxonomy().drift_labels
    faults: list[UserFault] = []
    seen: list[Message] = []
    revealed: set[str] = set()
    for m in messages:
        if is_user(m) and m.spoken:
            faults += _revealed(m, pieces, revealed, seen)
            faults += _invented(m, scenario, seen)
            if telecom:
                faults += _device_claims(m, scenario, seen)
            label = (drift_labels or {}).get(m.turn_index)
            if label in drift:
                faults.append(UserFault("role_drift", m.turn_index, label))
        seen.append(m)
    faults += _premature_stop(task, messages, termination)
    return sorted(faults, key=lambda f: (f.turn_index, FAULT_KINDS.index(f.kind)))


def _key(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _user_saw(seen: Iterable[Message]) -> list[Message]:
    """What the user could read: spoken turns of either side, its own tool calls and their results."""
    return [m for m in seen if m.spoken or (is_user(m) and m.tool_calls)
            or (is_tool(m) and m.tool_result is not None and m.tool_result.requestor == "user")]


def _said(message: Message) -> str:
    return " ".join([message.content, *(f"{c.name} {c.arguments}" for c in message.tool_calls)])


def _premature_stop(task: Any, messages: list[Message], termination: str) -> list[UserFault]:
    users = [m for m in messages if is_user(m) and m.spoken]
    criteria = task.evaluation_criteria
    if termination != "user_stop" or not users or criteria is None or not criteria.actions:
        return []
    calls = _executed_calls(messages)
    if any(c.name == TRANSFER_TOOL for m in messages if is_assistant(m) for c in m.tool_calls):
        return []
    last_words = [m.content for m in messages if is_assistant(m) and m.spoken][-2:]
    if any(REFUSAL.search(words) for words in last_words) or (last_words and CLOSING_OFFER.search(last_words[-1])):
        return []
    undone = [a.name for a in criteria.actions if not any(a.compare_with_tool_call(c) for c in calls)]
    return [UserFault("premature_stop", users[-1].turn_index, "undone: " + ", ".join(dict.fromkeys(undone)))] if undone else []


def _executed_calls(messages: list[Message]) -> list[Any]:
    """Every tool call answered without an error, as τ²'s ToolCall (arguments parsed), for its action check."""
    from tau2.data_model.message import ToolCall as Tau2Call

    ok = {m.tool_result.call_id for m in messages if is_tool(m) and m.tool_result is not None and not m.tool_result.error}
    out = []
    for m in messages:
        for c in m.tool_calls:
            arguments = c.parsed_arguments()
            if c.id in ok and arguments is not None:
                requestor = "user" if is_user(m) else "assistant"
                out.append(Tau2Call(id=c.id, name=c.name, arguments=arguments, requestor=requestor))
    return out


@dataclass(frozen=True)
class KnownPiece:
    """One piece of a user's known info: its value as written, its comparison key, and what kind of information it is."""

    value: str
    key: str
    kind: str


def _known_pieces(instructions: Any) -> list[KnownPiece]:
    """The id-like tokens and the name in the known info, less those the reason for the call already names."""
    known = instructions.known_info or ""
    reason = _key(instructions.reason_for_call or "")
    pieces: dict[str, KnownPiece] = {}
    for sentence in _SENTENCE.split(known):
        for name in _NAME_KNOWN.findall(sentence):
            pieces.setdefault(_key(name), KnownPiece(name, _key(name), "name"))
        for token in _ID_TOKEN.findall(sentence):
            pieces.setdefault(_key(token), KnownPiece(token, _key(token), _kind_of(token, sentence)))
    return [p for p in pieces.values() if p.key and p.key not in reason]


def _kind_of(token: str, sentence: str) -> str:
    if "@" in token:
        return "email"
    if re.fullmatch(r"\d{3}-\d{3}-\d{4}", token):
        return "phone"
    words = sentence.casefold()
    for kind in ("user id", "email", "zip", "phone", "reservation", "order", "payment"):
        if re.search(ASKED[kind], words):
            return kind
    return "id"


def _revealed(turn: Message, pieces: list[KnownPiece], revealed: set[str], seen: list[Message]) -> list[UserFault]:
    text = _key(turn.content)
    asked = " ".join(m.content for m in seen if is_assistant(m) and m.spoken)
    out = []
    for p in pieces:
        said = _says_name(turn.content, p.value) if p.kind == "name" else p.key in text
        if p.key in revealed or not said:
            continue
        revealed.add(p.key)
        if not (re.search(ASKED[p.kind], asked, re.I) or (p.kind in IDENTITY_KINDS and IDENTITY.search(asked))):
            out.append(UserFault("revealed_early", turn.turn_index, f"{p.kind}: {p.value}"))
    return out


def _says_name(text: str, name: str) -> bool:
    """Whether `text` names `name` as words (not inside an id such as `ada_byron_1815`)."""
    words = r"\W+".join(map(re.escape, re.findall(r"[a-z]+", name.casefold())))
    return re.search(rf"(?<![\w@.]){words}(?![\w@])", text.casefold()) is not None


def _invented(turn: Message, scenario: str, seen: list[Message]) -> list[UserFault]:
    known = [scenario, *(_said(m) for m in _user_saw(seen))]
    keys = _key(" ".join(known))
    numbers = {_value(n) for text in known for n in _NUMBER.findall(text)}
    words = set(re.findall(r"[a-z]+", " ".join(known).casefold()))
    out, flagged = [], set()
    for token in _ID_TOKEN.findall(turn.content):
        grounded = _value(token) in numbers if token.startswith("$") else _key(token) in keys
        if not grounded and _key(token) not in flagged:
            flagged.add(_key(token))
            out.append(UserFault("invented_fact", turn.turn_index, token))
    for name in _NAME_SAID.findall(turn.content):
        if not all(part in words for part in re.findall(r"[a-z]+", name.casefold())):
            out.append(UserFault("invented_fact", turn.turn_index, f"name: {name}"))
    return out


def _value(number: str) -> float:
    return float(number.lstrip("$").replace(",", "") or "nan")


def _claims(text: str) -> list[tuple[DeviceTopic, str | None, str]]:
    """The device states a text reports: (topic, on/off value where readable, the phrase)."""
    out = []
    for sentence in _SENTENCE.split(text):
        if not sentence.strip() or _NOT_A_REPORT.search(sentence):
            continue
        for topic in DEVICE_TOPICS:
            for pattern in topic.claims:
                if match := pattern.search(sentence):
                    state = match.groupdict().get("state")
                    between = sentence[match.start():match.start("state")] if state else ""
                    negated = bool(_NEGATION.search(between))
                    value = None if state is None else ("on" if (state.casefold() in _ON) != negated else "off")
                    out.append((topic, value, match.group(0)))
                    break
    return out


def _shown_state(topic: DeviceTopic, result: str) -> str | None:
    """The on/off value of `topic` a tool result shows, or None when it shows none."""
    if topic.shown is None:
        return None
    match = topic.shown.search(result)
    if match is None:
        if topic.name == "airplane_mode" and "Status Bar:" in result:
            return "on" if "Airplane Mode" in result.split("Status Bar:")[-1] else "off"
        return None
    value = next(v for v in match.groups() if v is not None).casefold()
    return "on" if value in _ON else "off"


def _device_claims(turn: Message, scenario: str, seen: list[Message]) -> list[UserFault]:
    stated = {topic.name for topic, _, _ in _claims(scenario)}
    results = [m for m in seen if is_tool(m) and m.tool_result is not None and m.tool_result.requestor == "user"
               and not m.tool_result.error]
    out = []
    for topic, value, phrase in _claims(turn.content):
        showing = [r for r in results
                   if r.tool_result.name in topic.tools or (topic.in_status_bar and "Status Bar:" in r.content)]
        if not showing and topic.name not in stated:
            out.append(UserFault("ungrounded_device_claim", turn.turn_index, f"{topic.name}: {phrase}"))
            continue
        shown = next((s for r in reversed(showing) if (s := _shown_state(topic, r.content)) is not None), None)
        if value is not None and shown is not None and value != shown:
            out.append(UserFault("invented_fact", turn.turn_index, f"{topic.name}: {value} (shown {shown})"))
    return out
