"""The one small async interface every text generator implements, with declared capabilities."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from testbed.transcript import ConversationId, ToolCall, Usage


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond plain chat completion, checked before any model call."""

    continue_user_turn: bool = False
    """Can open the chat template's user turn and let the model continue it (probe `raw` mode)."""
    structured_output: bool = False
    """Honours a JSON-schema `response_format`."""


@dataclass(frozen=True)
class GenerateRequest:
    """One chat completion request in OpenAI wire terms."""

    messages: list[dict[str, Any]]
    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    seed: int | None = None
    continue_final_message: bool = False
    """Continue the last message (its role kept) instead of opening a new assistant turn."""
    response_format: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    """OpenAI tool schemas the model may call (sent with `tool_choice: auto`); None: a plain chat turn."""
    extra: dict[str, Any] = field(default_factory=dict)
    conversation: ConversationId | None = None
    """The conversation (episode) an assistant's request belongs to, so an agent that keeps state per episode
    (testbed.backends.python_agent) finds its own; a model backend never sends it."""

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters as stored beside the generated message."""
        out: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens, "top_p": self.top_p}
        if self.seed is not None:
            out["seed"] = self.seed
        return out


@dataclass(frozen=True)
class Completion:
    """What came back: the text, why it stopped, and what it cost."""

    text: str
    finish_reason: str | None
    usage: Usage
    attempts: int = 1
    tool_calls: tuple[ToolCall, ...] = ()
    """The tools the model called (its text may then be empty)."""


class BackendError(Exception):
    """A generation that failed for good; `reason` is short, stored on the episode and reported."""

    def __init__(self, reason: str, *, retryable: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class BackendUnavailable(BackendError):
    """The server cannot be reached, does not serve the model or refuses the key: the whole run stops.

    Episode runners never record it on an episode: the episode is not at fault, and the episodes
    in flight are redone by the next run, while every finished one is already in the store.
    """


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception, or just the type where the message is empty (a bare TimeoutError)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@runtime_checkable
class Backend(Protocol):
    """Generates text for chat messages. Implementations are cheap to share between participants."""

    name: str
    model: str
    capabilities: Capabilities

    async def start(self) -> None:
        """Make the backend ready (connect, check health); raise BackendUnavailable with the URL if not."""

    async def generate(self, request: GenerateRequest) -> Completion:
        """Generate one completion, or raise BackendError with a reason."""

    async def close(self) -> None:
        """Release connections and anything the backend started."""
