"""The two sides of a τ² task: a tool-using assistant and a simulated user with a goal (and, in telecom, a phone).

Both are participants (`respond(transcript) -> Message`) over the testbed's one transcript; each
sees its own view of it. The assistant sees the true roles with its own tool calls and results;
the user sees only the spoken conversation, role-flipped (its model speaks as `assistant`), plus
its own tool traffic: never the assistant's tools. Contents another model wrote are neutralised
against each model's control tokens, as every participant does (testbed.loop.participants).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from testbed.backends.base import Backend, BackendError, GenerateRequest
from testbed.control_tokens import ControlTokens
from testbed.loop.participants import FLIPPED, ChatView, TurnSampling
from testbed.scenarios.tau2.user_framings import FLIPPED_MODES, TAU2_USER_MODES, customer_words, frame
from testbed.specs.loader import ResolvedAgent
from testbed.transcript import Message, Transcript, is_system


def _own_tool_traffic(m: Message, side: str) -> bool:
    """Whether `m` is a tool call made by `side`, or the result of one."""
    if m.tool_calls:
        return m.role == side
    return m.tool_result is not None and m.tool_result.requestor == side


def assistant_view(tokens: ControlTokens) -> ChatView:
    """The assistant's messages: system prompt, spoken turns and its own tool traffic, true roles, contents neutralised."""
    neutralise = tokens.neutralise

    def convert(m: Message) -> dict[str, Any] | None:
        if is_system(m):
            return m.as_chat()
        if m.spoken or _own_tool_traffic(m, "assistant"):
            return m.as_chat(neutralise(m.content))
        return None

    return ChatView(convert)


def user_view(tokens: ControlTokens, *, flipped: bool) -> ChatView:
    """The simulated user's messages: the spoken turns (role-flipped when `flipped`) and its own tool traffic."""
    neutralise = tokens.neutralise

    def convert(m: Message) -> dict[str, Any] | None:
        if m.spoken:
            return {"role": FLIPPED[m.role] if flipped else m.role, "content": neutralise(m.content)}
        if _own_tool_traffic(m, "user"):
            chat = m.as_chat(neutralise(m.content))
            return {**chat, "role": "assistant"} if m.tool_calls and flipped else chat
        return None

    return ChatView(convert)


class EmptyReply(BackendError):
    """The assistant under test replied with neither text nor a tool call, every time it was asked: τ²'s loop asks an
    empty reply again up to the endpoint's retries and then errors the simulation, so the episode is an error here
    too (the equivalence of the native loop and τ²'s orchestrator rests on it)."""


@dataclass
class ToolAssistant:
    """The assistant under test: τ²'s agent instructions and policy as its system prompt (the transcript's
    first message), the domain's tools, its agent's sampling; a reply is text for the user or tool calls."""

    agent: ResolvedAgent
    backend: Backend
    tools: list[dict[str, Any]]
    tokens: ControlTokens
    sampling: TurnSampling
    _view: ChatView = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._view = assistant_view(self.tokens)

    def derive(self, **changes) -> "ToolAssistant":
        """The same assistant with some fields changed (a routed backend)."""
        return replace(self, **changes)

    async def respond(self, transcript: Transcript) -> Message:
        """The assistant's next message: text, or tool calls for the environment."""
        s = self.sampling
        request = GenerateRequest(self._view.of(transcript), temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p,
                                  seed=s.seed_for(transcript), tools=self.tools or None, conversation=transcript.conversation)
        attempts = self.agent.spec.max_retries + 1
        for _ in range(attempts):
            completion = await self.backend.generate(request)
            if completion.tool_calls or completion.text.strip():
                return Message("assistant", completion.text, self.agent.spec.name, transcript.next_turn, request.sampling(),
                               completion.usage, completion.finish_reason, tool_calls=completion.tool_calls)
        raise EmptyReply(f"{self.agent.spec.name} replied with neither text nor a tool call {attempts} times in a row "
                         "(asked again up to its max_retries, as τ²'s loop asks; τ²'s loop then errors the episode)")


@dataclass
class GoalUser:
    """The simulated user with τ²'s user scenario and guidelines as its prompt, asked in its framing `mode`.

    `instructed`: the prompt, then the role-flipped conversation; the model writes the user's turn as its own
    reply (τ²'s user simulator), and in telecom may call its phone's tools. `raw`: the prompt, then the
    conversation with true roles and the chat template's user turn opened for the model to continue (needs a
    backend that can; no user tools). `transcript` and `oneshot` (testbed.scenarios.tau2.user_framings) keep a
    small model from speaking as the agent: the conversation as a transcript whose customer line the model
    continues, or τ²'s framing with one example customer turn.
    """

    agent: ResolvedAgent
    backend: Backend
    mode: str
    prompt: str
    tools: list[dict[str, Any]]
    tokens: ControlTokens
    sampling: TurnSampling
    _view: ChatView = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in TAU2_USER_MODES:
            raise ValueError(f"unknown τ² user mode {self.mode!r} | fix: use one of {', '.join(TAU2_USER_MODES)}")
        self._view = user_view(self.tokens, flipped=self.mode in FLIPPED_MODES)

    def derive(self, **changes) -> "GoalUser":
        """The same user with some fields changed (a routed backend)."""
        return replace(self, **changes)

    async def respond(self, transcript: Transcript) -> Message:
        """The user's next message: text for the assistant, or (telecom, instructed or oneshot) tool calls on its phone."""
        s = self.sampling
        can_continue = self.backend.capabilities.continue_user_turn
        framed = frame(self.mode, self.prompt, self._view.of(transcript), self.tools, can_continue=can_continue)
        request = GenerateRequest(framed.messages, temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p,
                                  seed=s.seed_for(transcript), continue_final_message=framed.continue_final,
                                  tools=framed.tools, extra=framed.extra)
        completion = await self.backend.generate(request)
        words = customer_words(self.mode, completion.text, framed.opener)
        return Message("user", words, self.agent.spec.name, transcript.next_turn, {**request.sampling(), "mode": self.mode},
                       completion.usage, completion.finish_reason, tool_calls=completion.tool_calls)
