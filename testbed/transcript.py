"""One conversation with true roles; every participant's view is derived from it, never stored.

The role vocabulary lives here: the constants (`USER`, `ASSISTANT`, `SYSTEM`, `TOOL`; the stored values stay the
plain strings) and the predicates (`is_user(message)`, ...) every other module compares roles with.
"""

from __future__ import annotations

import itertools
import secrets

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from testbed.tool_arguments import parse_arguments

Role = Literal["system", "user", "assistant", "tool"]
M = TypeVar("M")

SYSTEM: Role = "system"
"""The role of the scenario's instructions to a participant."""
USER: Role = "user"
"""The role of the (simulated or real) user's messages, the dataset's request included."""
ASSISTANT: Role = "assistant"
"""The role of the assistant under test's messages."""
TOOL: Role = "tool"
"""The role of a tool's result, answering a call of the assistant's (or, in dual-control tasks, the user's)."""
SPOKEN_ROLES: tuple[Role, ...] = (USER, ASSISTANT)
"""The roles that speak in the conversation proper (a message of one calling no tool is a turn: `Message.spoken`)."""


@dataclass(frozen=True)
class Usage:
    """Tokens and time spent on one generated message (zero for messages nobody generated)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.latency_s + other.latency_s,
        )


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool, as the model wrote it: `arguments` is the raw JSON text, parsed only when it runs."""

    id: str
    name: str
    arguments: str

    def as_chat(self) -> dict[str, Any]:
        """The OpenAI wire form of the call."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as the JSON object they must be (empty text is no arguments), or None when they are not one,
        or are too long or too deeply nested to parse (testbed.limits; see `checked_arguments` for why)."""
        return self.checked_arguments()[0]

    def checked_arguments(self) -> tuple[dict[str, Any] | None, str | None]:
        """The parsed arguments and None, or None and why not, as the end of a sentence starting "the arguments ..."
        ("are not a JSON object", "nest deeper than 64 levels ..."). The bounds are checked before parsing, so arguments
        nested a thousand deep are a reason, never a RecursionError (testbed.tool_arguments)."""
        return parse_arguments(self.arguments)


@dataclass(frozen=True)
class ToolResult:
    """What a `tool` message answers: the call's id and tool, who asked (`assistant` or `user`), whether it failed."""

    call_id: str
    name: str
    requestor: str = "assistant"
    error: bool = False


@dataclass(frozen=True)
class Message:
    """A message with its true role, who spoke it, and how it was made.

    `reused_from` names the shared generation a message was copied from (the probe's single
    assistant answer per item), so its usage is counted once, where it was generated.
    """

    role: Role
    content: str
    speaker: str
    turn_index: int
    sampling: dict | None = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    reused_from: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    """The tools this message calls (an assistant's, or in dual-control tasks a user's); its text may be empty."""
    tool_result: ToolResult | None = None
    """For a `tool` message: the call it answers."""

    @property
    def spoken(self) -> bool:
        """Whether this is a turn of the conversation proper: a user or assistant message that calls no tool."""
        return self.role in SPOKEN_ROLES and not self.tool_calls

    def as_chat(self, content: str | None = None) -> dict[str, Any]:
        """The OpenAI chat-format dict of this message, true role kept (`content` in place of its own when given)."""
        text = self.content if content is None else content
        if self.tool_calls:
            return {"role": self.role, "content": text or None, "tool_calls": [c.as_chat() for c in self.tool_calls]}
        if self.tool_result is not None:
            return {"role": "tool", "tool_call_id": self.tool_result.call_id, "content": text}
        return {"role": self.role, "content": text}


class ConversationId:
    """Which episode a request belongs to: one per transcript, never sent to a model.

    Its value is the episode's id in the store (the stable hash testbed.scenarios.base.variant gives it), so it is the
    same in every process and after a resume, and an agent's own logs join the store's transcripts: a python agent reads
    it as `AgentTurn.episode_id`, an HTTP agent is sent it as `episode_id`. A transcript of no stored episode (a test's,
    a benchmark's) gets a value unique across processes instead. A per-episode agent (testbed.backends.python_agent)
    keys its state by the object itself, not its value: state held in a weak mapping from it lives as long as its
    transcript and goes with the episode.
    """

    __slots__ = ("value", "__weakref__")
    _COUNTER = itertools.count()
    _PROCESS = secrets.token_hex(4)

    def __init__(self, episode_id: str | None = None) -> None:
        self.value = episode_id if episode_id is not None else f"{self._PROCESS}-{next(self._COUNTER)}"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"ConversationId({self.value!r})"


@dataclass
class Transcript:
    """The ordered messages of one episode; append-only while the episode runs.

    The turn loop asks after every turn how many user turns there are and how many completion
    tokens were generated; those counts are kept as messages are appended (`_tally`), so a check
    costs the same at turn 90 as at turn 2.
    """

    messages: list[Message] = field(default_factory=list)
    _tally: tuple[int, Message | None, int, int] = field(default=(0, None, 0, 0), init=False, repr=False, compare=False)
    """(messages counted, the last one counted, user messages, completion tokens generated) among them."""
    conversation: ConversationId = field(default_factory=ConversationId, kw_only=True, repr=False, compare=False)
    """This conversation's identity, which an assistant's requests carry (GenerateRequest.conversation): the stored
    episode's id where the transcript is one (`of_episode`)."""

    @classmethod
    def of_episode(cls, episode_id: str, messages: Iterable[Message] = ()) -> "Transcript":
        """The transcript of stored episode `episode_id` (starting with `messages`): the assistant's requests carry the
        id the store keys the episode by, so an agent's logs join the store's transcripts."""
        return cls(list(messages), conversation=ConversationId(episode_id))

    def append(self, message: Message) -> None:
        """Add the next message; its turn index must follow the last one."""
        expected = len(self.messages)
        if message.turn_index != expected:
            raise ValueError(f"turn index {message.turn_index} out of order, expected {expected}")
        self.messages.append(message)

    def _counts(self) -> tuple[int, int]:
        counted, last, users, tokens = self._tally
        messages = self.messages
        if counted > len(messages) or (counted and messages[counted - 1] is not last):
            counted, users, tokens = 0, 0, 0
        for m in messages[counted:]:
            users += m.role == USER and not m.tool_calls
            if m.reused_from is None:
                tokens += m.usage.completion_tokens
        if messages:
            self._tally = (len(messages), messages[-1], users, tokens)
        return users, tokens

    def user_turns(self) -> int:
        """User messages so far that speak (a user's tool call is not a turn), the opening one included."""
        return self._counts()[0]

    def completion_tokens(self) -> int:
        """Completion tokens generated in this episode so far, shared generations excluded (what a token budget caps)."""
        return self._counts()[1]

    @property
    def next_turn(self) -> int:
        """Turn index the next message will get."""
        return len(self.messages)

    def chat(self) -> list[dict[str, str]]:
        """The conversation as the assistant sees it: true roles, chat format."""
        return [m.as_chat() for m in self.messages]

    def dialogue(self) -> list[Message]:
        """The spoken messages (`Message.spoken`): what a simulated user is allowed to read of the conversation,
        without system prompts, tool calls or tool results."""
        return [m for m in self.messages if m.spoken]

    def usage(self) -> Usage:
        """Usage generated in this episode, shared generations excluded."""
        total = Usage()
        for m in self.messages:
            if m.reused_from is None:
                total = total + m.usage
        return total


def _field(message: Any, name: str) -> Any:
    return getattr(message, name) if hasattr(message, "role") else message[name]


def role_of(message: Any) -> Any:
    """The role of a message in any of its forms: a `Message`, a stored row or dict (`message["role"]`), a pandas
    row or a τ² or wire record (`message.role`). With the predicates below (which read it the same way, inline, as
    they run on every turn of the hot path), the one place that reads a role, so no module compares role strings itself."""
    return _field(message, "role")


def is_user(message: Any) -> bool:
    """Whether the message is the user's (`USER`): a generated turn, the dataset's request or a user's tool call."""
    try:
        return message.role == USER
    except AttributeError:
        return message["role"] == USER


def is_assistant(message: Any) -> bool:
    """Whether the message is the assistant's (`ASSISTANT`)."""
    try:
        return message.role == ASSISTANT
    except AttributeError:
        return message["role"] == ASSISTANT


def is_system(message: Any) -> bool:
    """Whether the message is a system prompt (`SYSTEM`)."""
    try:
        return message.role == SYSTEM
    except AttributeError:
        return message["role"] == SYSTEM


def is_tool(message: Any) -> bool:
    """Whether the message is a tool's result (`TOOL`)."""
    try:
        return message.role == TOOL
    except AttributeError:
        return message["role"] == TOOL


def _speaker(message: Any) -> Any:
    try:
        return _field(message, "speaker")
    except (KeyError, IndexError, AttributeError):
        return None


def _calls_tools(message: Any) -> bool:
    if isinstance(message, Message):
        return bool(message.tool_calls)
    try:
        value = _field(message, TOOL_CALLS_COLUMN)
    except (KeyError, IndexError, AttributeError):
        return False
    return isinstance(value, str) and bool(value)


TOOL_CALLS_COLUMN = "tool_calls_json"
"""The store's column (and a stored row's key) holding a message's tool calls; NULL when it calls none."""


@dataclass(frozen=True)
class GeneratedTurnRule:
    """Which messages of an episode are generated user turns: the testbed's one definition of them.

    A generated user turn is a message of a `user_roles` role that comes after the episode's first
    message of an `opening_roles` role (the first assistant answer) and calls no tool: a user's tool
    call (a dual-control task's phone) acts rather than speaks, and tool results are nobody's turn. Judges label these turns and
    every report counts them. What comes before the first answer (system prompts, the dataset's
    request, any scripted opening user turns) was written by the scenario, not by the simulated user,
    so it is never judged as the user's behaviour; a message of any other role neither counts nor opens,
    and neither does a message spoken by one of `scripted_speakers` (a dataset's own conversation, whose
    earlier answers and user turns are the context a real-conversation probe starts from).

    Every form of the rule derives from `GENERATED_TURNS`: `generated_user_turns` here, and the
    store's SQL and pandas forms (`testbed.store.generated_turns`), so teaching the rule a new role is
    an edit of that one declaration.
    """

    user_roles: tuple[str, ...]
    """Roles whose messages count as the simulated user speaking."""
    opening_roles: tuple[str, ...]
    """Roles whose first message opens the generated part of an episode."""
    scripted_speakers: tuple[str, ...] = ()
    """Speakers whose messages are the scenario's script: they neither open the generated part nor count."""

    def select(self, messages: Iterable[M]) -> list[M]:
        """The generated user turns among one episode's messages (in turn order), returned as given."""
        out: list[M] = []
        opened = False
        for m in messages:
            role = _field(m, "role")
            if self.scripted_speakers and _speaker(m) in self.scripted_speakers:
                continue
            if role in self.opening_roles:
                opened = True
            elif role in self.user_roles and opened and not _calls_tools(m):
                out.append(m)
        return out


DATASET_SPEAKER = "dataset"
"""The speaker of the messages a scenario copies from its dataset (the request, a real conversation's context)."""
GENERATED_TURNS = GeneratedTurnRule(user_roles=(USER,), opening_roles=(ASSISTANT,), scripted_speakers=(DATASET_SPEAKER,))
"""The rule in force: user messages after the first assistant message the dataset did not supply."""


def generated_user_turns(messages: Iterable[M]) -> list[M]:
    """The user messages the simulated user wrote: `GENERATED_TURNS` applied to one episode's messages.

    `messages` are one episode's messages in turn order: `Message` objects, or anything with a
    `role` attribute or key (dicts, sqlite rows, pandas rows); the matching ones are returned as given.
    """
    return GENERATED_TURNS.select(messages)


def request_message(messages: Iterable[M]) -> M | None:
    """The episode's request: its first user message that calls no tool (the dataset's question, τ²'s reason for the
    call), what the conversation is about and what a judge reads each user turn against. `messages` are one episode's
    in turn order, in any form `role_of` reads; the match is returned as given, None when there is none.

    The testbed's one definition of the request: the store's SQL form is `testbed.store.generated_turns.request_sql`.
    """
    return next((m for m in messages if is_user(m) and not _calls_tools(m)), None)


def request_text(messages: Iterable[Any]) -> str:
    """The text of the episode's request (`request_message`), empty when it has none."""
    request = request_message(messages)
    return "" if request is None else _field(request, "content")
