"""Bring your own agent: what an agent under test receives each turn and what it may return.

An agent spec names the agent instead of a model:

    name: my-agent
    backend: python
    callable: my_package.agent:MyAgent      # a class with an async `respond`, or an async function
    options: {model: gpt-4o-mini}            # keyword arguments the class is built with
    timeout_s: 60                            # a turn that takes longer is the episode's error

Each turn the agent is given an `AgentTurn`: the conversation as the assistant sees it (OpenAI chat
dicts with true roles: its system prompt, the user's and its own turns and, on τ² tasks, its own tool
calls and their results), the OpenAI tool schemas it may call, the episode's id (the id the store keys
the episode by, so the agent's own logs join the stored transcripts) and the sampling its spec asks
for. It returns its next message (`AgentReply`): text, an `AgentMessage` (text, tool calls for the
environment to execute, what it cost), a `testbed.backends.base.Completion`, or a dict in the HTTP
agent's JSON contract (`{"content": ..., "tool_calls": [...]}`, testbed.backends.http_agent).

A class is built once per episode and its `respond` awaited at every turn of that episode, so its
state (memory, a scratchpad, retrieved notes) is its own; a function is awaited at every turn of every
episode and keys any state it keeps by `turn.episode_id`. Anything it raises (BaseExceptions such as
SystemExit, KeyboardInterrupt or CancelledError included), a reply of another shape, a reply longer than
the spec's `max_reply_bytes` or a turn past `timeout_s` is the episode's error, naming the agent; the run
goes on. Tool-call arguments are JSON text; arguments longer or nested deeper than testbed.limits allows
are answered with τ²'s tool error, like arguments that are not JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Union, runtime_checkable

from testbed.backends.base import Completion
from testbed.backends.openai_reply import MalformedReply, parse_completion
from testbed.transcript import ToolCall, Usage


@dataclass(frozen=True)
class AgentTurn:
    """One turn of the conversation, from the agent's side: what it has to answer."""

    messages: list[dict[str, Any]]
    """The conversation so far in OpenAI chat form, true roles; the last message is the one to answer."""
    tools: list[dict[str, Any]] | None
    """The OpenAI tool schemas the agent may call (τ² tasks); None where the scenario has no tools."""
    episode_id: str
    """The episode this turn belongs to, as the store keys it (the episodes' `episode_id`; `testbed show-episode
    RUN EPISODE` prints its transcript): the same at every turn of one episode, in every process and after a resumed
    run, unique in the run, so the agent's own logs join the stored transcripts. On the probe, where an item's one
    answer is shared by all its episodes, it is that shared answer's id (which their copies of it name in
    `reused_from`)."""
    sampling: dict[str, Any] = field(default_factory=dict)
    """The spec's `temperature`, `max_tokens`, `top_p` (and `seed` when set), for an agent that calls a model."""


@dataclass(frozen=True)
class AgentMessage:
    """The agent's next message: text for the user, or tool calls for the environment (text may then be empty)."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    """Tokens the agent spent on the turn, if it counts them; the testbed measures the time itself."""


AgentReply = Union[str, AgentMessage, Completion, Mapping[str, Any]]
"""What `respond` (or an agent function) may return."""


@runtime_checkable
class Agent(Protocol):
    """An agent class: built once per episode with the spec's `options`, asked for each of its turns."""

    async def respond(self, turn: AgentTurn) -> AgentReply:
        """The agent's next message for this turn of its episode."""


AgentFunction = Callable[[AgentTurn], Awaitable[AgentReply]]
"""An agent function: awaited for every turn of every episode."""


class MalformedAgentReply(ValueError):
    """A reply that is none of the shapes `AgentReply` allows; the message says what it was."""


def completion_of(reply: object, latency_s: float) -> Completion:
    """The testbed's Completion for an agent's reply, its latency measured by the caller; MalformedAgentReply if unreadable."""
    if isinstance(reply, str):
        return Completion(reply, "stop", Usage(0, 0, latency_s))
    if isinstance(reply, AgentMessage):
        if not isinstance(reply.content, str) or not all(isinstance(c, ToolCall) for c in reply.tool_calls):
            raise MalformedAgentReply("an AgentMessage whose content is not text or whose tool_calls are not ToolCalls")
        usage = Usage(reply.usage.prompt_tokens, reply.usage.completion_tokens, latency_s)
        calls = _text_calls(reply.tool_calls)
        return Completion(reply.content, "tool_calls" if calls else "stop", usage, tool_calls=calls)
    if isinstance(reply, Completion):
        usage = Usage(reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.latency_s or latency_s)
        if not isinstance(reply.text, str):
            raise MalformedAgentReply("a Completion whose text is not text")
        return Completion(reply.text, reply.finish_reason, usage, reply.attempts, _text_calls(reply.tool_calls))
    if isinstance(reply, Mapping):
        try:
            return completion_from_json(dict(reply), latency_s)
        except MalformedReply as exc:
            raise MalformedAgentReply(str(exc)) from None
    raise MalformedAgentReply(f"a {type(reply).__name__}, not text, an AgentMessage, a Completion or a dict")


def _text_calls(calls: Any) -> tuple[ToolCall, ...]:
    """The calls, each a ToolCall whose id, name and arguments are text (what the store, the views and τ²'s tool desk
    read); MalformedAgentReply naming what is not."""
    calls = tuple(calls or ())
    if not all(isinstance(c, ToolCall) for c in calls):
        raise MalformedAgentReply("tool_calls that are not ToolCalls")
    if not all(isinstance(p, str) for c in calls for p in (c.id, c.name, c.arguments)):
        raise MalformedAgentReply("a ToolCall whose id, name or arguments are not text (arguments are JSON text: "
                                  "json.dumps them)")
    return calls


def completion_from_json(body: Any, latency_s: float, attempts: int = 1) -> Completion:
    """A decoded JSON reply: an OpenAI chat completion (`choices`) as it is, or the contract's
    `{"content": str | null, "tool_calls": [...], "usage": {...}}`, each call OpenAI-shaped or
    `{"name": ..., "arguments": {...} or "json text"}`; MalformedReply when it is neither."""
    if isinstance(body, dict) and "choices" not in body:
        calls = body.get("tool_calls")
        if isinstance(calls, list):
            calls = [_openai_call(c) for c in calls]
        message = {"content": body.get("content"), "tool_calls": calls}
        if "content" not in body and not calls:
            message.pop("content")
        finish = "tool_calls" if calls else "stop"
        body = {"choices": [{"message": message, "finish_reason": finish}], "usage": body.get("usage")}
    return parse_completion(body, latency_s, attempts)


def _openai_call(call: Any) -> Any:
    """A flat `{"id"?, "name", "arguments"}` call in OpenAI's shape; an OpenAI-shaped one (or junk) as it is."""
    if isinstance(call, dict) and "function" not in call and "name" in call:
        out = {"type": "function", "function": {"name": call["name"], "arguments": call.get("arguments", "")}}
        return {"id": call["id"], **out} if "id" in call else out
    return call
