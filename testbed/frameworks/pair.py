"""What every agent-framework adapter is given: the same assistant ⇄ simulated-user pair, as settings.

An adapter builds the pair its framework's way (its agents, its model clients, its loop) from these
settings: the same models on the same servers, the same system prompts, the same sampling. What the
framework then does with them (how it maps roles, what it adds to the prompt, when it stops) is what
a comparison measures, so nothing here shapes a request. The stop rules are the scenario's; each
adapter builds its framework's own stop mechanism, and the decision inside it is `Limits.first_stop`
(testbed.loop.orchestrator), the one stop order the native loop asks too.

Frameworks send text as they hold it: the testbed's control-token neutralising (which the native
participants apply to their views) is not applied inside a framework, and shows in the wire log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from testbed.backends.base import BackendError, BackendUnavailable
from testbed.loop.participants import TurnSampling, agent_sampling
from testbed.redaction import register_secret
from testbed.transcript import Message, Transcript, Usage, is_user

NO_KEY = "EMPTY"
"""The API key a framework's client is given for a server that wants none (clients refuse an empty one)."""


@dataclass(frozen=True)
class Endpoint:
    """Where one participant's model client sends its requests.

    On a wire recorder's route, `headers` tell the episode's requests apart, `http_clients` are the
    recorder's shared (sync, async) httpx clients the SDK client is given (so none is built per
    episode, and none may be closed by one), and `max_retries` is 0: the recorder retries.
    """

    base_url: str
    model: str
    api_key: str
    timeout_s: float = 300.0
    max_retries: int = 4
    headers: dict[str, str] = field(default_factory=dict)
    http_clients: tuple[Any, Any] | None = None


@dataclass(frozen=True)
class Side:
    """One participant of the pair: who it is, where its model is, what it is told, how it samples."""

    name: str
    endpoint: Endpoint
    system_prompt: str | None
    sampling: TurnSampling


@dataclass(frozen=True)
class Pair:
    """The assistant and the simulated user, as every framework adapter builds them."""

    assistant: Side
    user: Side


def endpoint_of(participant) -> Endpoint:
    """The endpoint of a participant whose backend talks to an OpenAI-compatible server (its route through
    the wire recorder when the run keeps a wire log)."""
    backend = participant.backend
    base_url = getattr(backend, "base_url", None)
    if base_url is None:
        raise BackendError(f"backend {backend.name} is not an OpenAI-compatible server, which an agent framework's model client needs")
    key = NO_KEY
    if getattr(backend, "api_key_env", None):
        key = os.environ.get(backend.api_key_env) or ""
        if not key:
            raise BackendUnavailable(f"environment variable {backend.api_key_env} is empty: export the API key for {base_url}")
        register_secret(key)
    inner = getattr(backend, "inner", backend)
    shared = getattr(backend, "http_clients", None)
    if shared is None:
        return Endpoint(base_url, backend.model, key, getattr(inner, "timeout_s", 300.0), getattr(inner, "max_retries", 4))
    from testbed.wire.faults import RetryPolicy

    return Endpoint(base_url, backend.model, key, RetryPolicy.of(backend).client_timeout_s(), 0, dict(backend.headers), shared())


def pair_of(assistant, user) -> Pair:
    """The pair's settings, read from the native participants the scenario built (an instructed dialogue user)."""
    if getattr(user, "mode", None) != "instructed" or not getattr(user, "prompt", None):
        raise BackendError("agent frameworks run an instructed simulated user with a persona prompt (user_modes: [instructed])")
    return Pair(
        Side(assistant.agent.spec.name, endpoint_of(assistant), assistant.agent.system_prompt, agent_sampling(assistant.agent)),
        Side(user.agent.spec.name, endpoint_of(user), user.prompt, user.sampling or agent_sampling(user.agent)),
    )


def opening(transcript: Transcript) -> list[Message]:
    """The conversation so far without system prompts (the task a framework is started with)."""
    dialogue = transcript.dialogue()
    if not dialogue or not is_user(dialogue[-1]):
        raise BackendError("an agent framework starts from the opening user turn: the transcript must end with one")
    return dialogue


def generated(transcript: Transcript, role: str, side: Side, content: str, usage: Usage = Usage(),
              finish_reason: str | None = None, **sampling_extra) -> Message:
    """The next message of the transcript as one participant generated it, with the sampling it was asked for."""
    s = side.sampling
    sampling = {"temperature": s.temperature, "max_tokens": s.max_tokens, "top_p": s.top_p, **({"seed": s.seed} if s.seed is not None else {}),
                **sampling_extra}
    return Message(role, content, side.name, transcript.next_turn, sampling, usage, finish_reason)

