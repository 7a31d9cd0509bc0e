"""Participants: an assistant agent and a simulated user, each `respond(transcript) -> Message`.

Sampling is bound when a participant is built (the assistant's from its agent spec, a simulated
user's from the episode's condition: temperature, token limit, seed), so every participant has the
same one-method interface and the turn loop (a framework, testbed.frameworks) needs nothing else.

Every message list a participant sends carries contents with its own model's control tokens
neutralised (testbed.control_tokens), so text one model wrote cannot close a turn or forge a role
in another model's chat template. Researcher-written text is sent as written: the system prompt
(the only source of system messages in a transcript), the instructed prompt around
`{conversation}` and the persona prompt. The transcript itself is never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol, TypeVar

from testbed.backends.base import Backend, BackendError, GenerateRequest
from testbed.control_tokens import ControlTokens
from testbed.specs.loader import ResolvedAgent
from testbed.templates import CONVERSATION_SLOT, fill_slots
from testbed.transcript import SYSTEM, Message, Transcript


class Participant(Protocol):
    """Anyone who speaks in a conversation: given the transcript so far, the next message."""

    async def respond(self, transcript: Transcript) -> Message:
        """The participant's next message, with its true role and the transcript's next turn index."""


@dataclass(frozen=True)
class TurnSampling:
    """How a simulated user samples its turns, fixed by the episode's conditions.

    `seed_per_turn` adds the turn index to the seed, so that a user over many turns does not draw
    the same sample at every turn (dialogues); the probe's single turn uses the seed as it is.
    """

    temperature: float
    max_tokens: int
    top_p: float = 1.0
    seed: int | None = None
    seed_per_turn: bool = False

    def seed_for(self, transcript: Transcript) -> int | None:
        """The seed of the turn that follows `transcript`."""
        if self.seed is None or not self.seed_per_turn:
            return self.seed
        return self.seed + transcript.next_turn


def user_sampling(agent: ResolvedAgent, temperature: float, max_tokens: int, seed: int | None, *,
                  per_turn: bool = False) -> TurnSampling:
    """An episode's sampling for the simulated user: its temperature, token limit and seed, the agent's top_p."""
    return TurnSampling(temperature, max_tokens, agent.spec.sampling.top_p, seed, per_turn)


def agent_sampling(agent: ResolvedAgent) -> TurnSampling:
    """The agent spec's own sampling, for a simulated user built without an episode's conditions."""
    s = agent.spec.sampling
    return TurnSampling(s.temperature, s.max_tokens, s.top_p, s.seed)


def shown(messages: list[dict[str, str]], tokens: ControlTokens) -> list[dict[str, str]]:
    """New message dicts with non-system contents neutralised; system prompts are the researcher's own."""
    return [m if m["role"] == SYSTEM else {**m, "content": tokens.neutralise(m["content"])} for m in messages]


P = TypeVar("P")


def with_tokens(participant: P, tokens: ControlTokens) -> P:
    """The participant with its control tokens given rather than looked up: a run looks them up once per
    agent instead of once per episode (the lookup reads the disk for a model not on it)."""
    participant.__dict__["tokens"] = tokens
    return participant


class ChatView:
    """One participant's message list for one transcript, grown by the messages appended since the last look.

    Every message is converted (role mapped, contents neutralised) once, not again at every later
    turn. A different transcript, or one that no longer extends what was seen, starts the list over.
    `convert` returns None for a message the participant does not see.
    """

    def __init__(self, convert: Callable[[Message], dict[str, str] | None]):
        self._convert = convert
        self._transcript: Transcript | None = None
        self._last: Message | None = None
        self._seen = 0
        self._messages: list[dict[str, str]] = []

    def of(self, transcript: Transcript) -> list[dict[str, str]]:
        """The converted messages of `transcript`, as a new list the caller may keep (a request owns its messages)."""
        messages = transcript.messages
        seen = self._seen
        if transcript is not self._transcript or seen > len(messages) or (seen and messages[seen - 1] is not self._last):
            self._transcript, seen, self._messages = transcript, 0, []
        convert, out = self._convert, self._messages
        for m in messages[seen:]:
            if (d := convert(m)) is not None:
                out.append(d)
        self._seen = len(messages)
        self._last = messages[-1] if messages else None
        return list(out)


@dataclass
class Assistant:
    """Answers with the true-role view of the transcript, under its agent's sampling."""

    agent: ResolvedAgent
    backend: Backend

    @cached_property
    def tokens(self) -> ControlTokens:
        """The control tokens this assistant's model must not receive from the conversation."""
        return ControlTokens.for_agent(self.agent.spec)

    @cached_property
    def _chat(self) -> ChatView:
        return true_role_view(self.tokens)

    def view(self, transcript: Transcript) -> list[dict[str, str]]:
        """The true-role conversation as sent: dataset and simulated-user text neutralised."""
        return self._chat.of(transcript)

    async def respond(self, transcript: Transcript) -> Message:
        """Generate the assistant's next message."""
        s = self.agent.spec.sampling
        request = GenerateRequest(self.view(transcript), temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p,
                                  seed=s.seed, conversation=transcript.conversation)
        completion = await self.backend.generate(request)
        return Message("assistant", completion.text, self.agent.spec.name, transcript.next_turn, request.sampling(),
                       completion.usage, completion.finish_reason)


def true_role_view(tokens: ControlTokens) -> ChatView:
    """The conversation with true roles, non-system contents neutralised (the same dicts as `shown(transcript.chat(), tokens)`)."""
    neutralise = tokens.neutralise
    return ChatView(lambda m: m.as_chat() if m.role == SYSTEM else {"role": m.role, "content": neutralise(m.content)})


def render_conversation(transcript: Transcript) -> str:
    """The conversation as plain text with speaker labels, for a model that is told it is the user."""
    labels = {"user": "User", "assistant": "Assistant"}
    return "\n\n".join(f"{labels[m.role]}: {m.content}" for m in transcript.dialogue())


@dataclass
class SimulatedUser:
    """Writes the user's next turn, in one of two modes.

    `raw`: the chat template's user turn is opened after the conversation and the model continues
    it (vLLM `continue_final_message`); the purest form of the probe, no instructions at all.
    `instructed`: the role-play prompt is sent as one user message with the conversation rendered
    as text in place of `{conversation}`. The conversation is shown as text rather than as a
    role-flipped message list so that every chat template accepts it (many refuse a history that
    starts with an assistant turn); the transcript itself keeps its true roles.
    """

    agent: ResolvedAgent
    backend: Backend
    mode: str
    prompt: str | None = None
    sampling: TurnSampling | None = field(default=None)

    def __post_init__(self) -> None:
        if self.mode == "raw" and not self.backend.capabilities.continue_user_turn:
            raise BackendError(
                f"agent {self.agent.spec.name} ({self.agent.path}) cannot continue the user turn, which user mode `raw` needs: "
                "use a vLLM backend, or user_modes: [instructed]"
            )
        if self.mode == "instructed" and (not self.prompt or CONVERSATION_SLOT not in self.prompt):
            raise BackendError(f"the instructed user prompt must contain {CONVERSATION_SLOT} where the conversation goes")

    @cached_property
    def tokens(self) -> ControlTokens:
        """The control tokens this user's model must not receive from the conversation."""
        return ControlTokens.for_agent(self.agent.spec)

    def derive(self, **changes) -> "SimulatedUser":
        """The same user with some fields changed (an episode's sampling, a turn's prompt), checks redone,
        control tokens carried over rather than looked up again."""
        other = replace(self, **changes)
        for kept in ("tokens", "_chat"):
            if kept in self.__dict__ and not {"agent", "mode"} & changes.keys():
                other.__dict__[kept] = self.__dict__[kept]
        return other

    @cached_property
    def _chat(self) -> ChatView:
        return true_role_view(self.tokens)

    def view(self, transcript: Transcript) -> tuple[list[dict[str, str]], bool]:
        """The messages this user sends to its model, and whether the last one is continued."""
        if self.mode == "raw":
            return self._chat.of(transcript) + [{"role": "user", "content": ""}], True
        assert self.prompt is not None
        conversation = self.tokens.neutralise(render_conversation(transcript))
        return [{"role": "user", "content": fill_slots(self.prompt, {"conversation": conversation})}], False

    async def respond(self, transcript: Transcript) -> Message:
        """Generate the user's next turn under the bound sampling; the text is stored exactly as generated."""
        messages, continue_final = self.view(transcript)
        s = self.sampling or agent_sampling(self.agent)
        request = GenerateRequest(messages, temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p,
                                  seed=s.seed_for(transcript), continue_final_message=continue_final)
        completion = await self.backend.generate(request)
        sampling = {**request.sampling(), "mode": self.mode}
        return Message("user", completion.text, self.agent.spec.name, transcript.next_turn, sampling,
                       completion.usage, completion.finish_reason)


FLIPPED = {"user": "assistant", "assistant": "user"}


def flipped_view(transcript: Transcript) -> list[dict[str, str]]:
    """The dialogue with roles swapped: the simulated user's model speaks as `assistant`."""
    return [{"role": FLIPPED[m.role], "content": m.content} for m in transcript.dialogue()]


@dataclass
class DialogueUser(SimulatedUser):
    """A simulated user over many turns.

    `raw` continues the chat template's user turn as in the probe. `instructed` sends the persona
    prompt (`prompt`, already filled in) as the system message followed by the role-flipped
    dialogue, so the model writes the user's next turn as its own reply (τ²-bench's view).
    """

    def __post_init__(self) -> None:
        if self.mode == "raw" and not self.backend.capabilities.continue_user_turn:
            raise BackendError(
                f"agent {self.agent.spec.name} ({self.agent.path}) cannot continue the user turn, which user mode `raw` needs"
            )
        if self.mode == "instructed" and not self.prompt:
            raise BackendError("an instructed dialogue user needs a persona prompt")

    @cached_property
    def _chat(self) -> ChatView:
        if self.mode == "raw":
            return true_role_view(self.tokens)
        neutralise = self.tokens.neutralise
        return ChatView(lambda m: None if m.role == SYSTEM else {"role": FLIPPED[m.role], "content": neutralise(m.content)})

    def view(self, transcript: Transcript) -> tuple[list[dict[str, str]], bool]:
        """Raw: true roles plus an open user turn. Instructed: persona prompt plus the flipped dialogue."""
        if self.mode == "raw":
            return self._chat.of(transcript) + [{"role": "user", "content": ""}], True
        assert self.prompt is not None
        return [{"role": "system", "content": self.prompt}, *self._chat.of(transcript)], False
