"""`backend: http-agent`: an agent behind a URL in the assistant's seat, whether or not a model is behind it.

The contract. Each turn is one `POST url` with a JSON body in the OpenAI chat-completions shape:

    {"model": "<the spec's model, default its name>", "messages": [...], "tools": [...], "tool_choice": "auto",
     "temperature": 0.0, "max_tokens": 256, "top_p": 1.0, "episode_id": "<the stored episode's id>"}

`messages` is the conversation as the assistant sees it (true roles; on τ² tasks its own tool calls and
their results); `tools` is there only where the scenario has tools. `episode_id` is the id the store keys
the episode by (as `AgentTurn.episode_id`: the same at every turn, in every process and after a resume),
so the agent's own logs join the stored transcripts. The answer is either an OpenAI chat completion
(`{"choices": [{"message": {...}}], "usage": {...}}`, taken as it is) or the short form

    {"content": "text for the user, or null", "tool_calls": [{"name": "...", "arguments": {...}}], "usage": {...}}

(`tool_calls` and `usage` optional; a call may also be OpenAI-shaped). Everything else is as for an
OpenAI-compatible model backend, which this one is with another path: a transient fault (5xx, 429, a
reset, a body that is not a reply) is retried `max_retries` times with backoff, a turn past `timeout_s`
is retried once, a key named by `api_key_env` is sent as a bearer token and redacted everywhere, and
the requests go through the wire recorder (`--wire`). A server that does not answer at all stops the
run (any HTTP status counts as an answer); a turn that fails for good is the episode's error,
its reason naming the agent. A reply body is read up to the spec's `max_reply_bytes` and a redirect is
followed only to the same scheme, host and port: a longer or endless body, or a redirect elsewhere (the
conversation would be sent there), is the episode's error at once, naming the URLs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from yarl import URL

from testbed.backends.agent_protocol import completion_from_json
from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest, describe
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.redaction import redact
from testbed.specs.agent import AgentSpec
from testbed.specs.registries import BackendEntry


class HTTPAgentBackend(OpenAICompatibleBackend):
    """An OpenAI-compatible backend POSTing to the agent's own URL, reading either reply shape, sending the episode id."""

    parse_reply = staticmethod(completion_from_json)
    url_field = "url"

    def __init__(self, spec: AgentSpec):
        assert spec.url is not None
        url = URL(spec.url)
        self.url = spec.url
        super().__init__(base_url=str(url.origin()), path=spec.url[len(str(url.origin())):].lstrip("/"), model=spec.model,
                         name=spec.name, api_key_env=spec.api_key_env, capabilities=Capabilities(), concurrency=spec.concurrency,
                         timeout_s=spec.timeout_s, max_retries=spec.max_retries, max_reply_bytes=spec.max_reply_bytes)

    def _payload(self, request: GenerateRequest) -> dict[str, Any]:
        payload = super()._payload(request)
        if request.conversation is not None:
            payload["episode_id"] = str(request.conversation)
        return payload

    async def _models(self) -> Any:
        """Whether the agent's server answers at all (`GET url`; any HTTP status will do, a redirect too, which is
        not followed), for start and health checks. The body is not read: the status line is the answer."""
        session = await self._ensure_session()
        try:
            timeout = aiohttp.ClientTimeout(total=self.connect_timeout_s)
            async with session.get(self.url, timeout=timeout, allow_redirects=False) as resp:
                resp.release()
        except asyncio.TimeoutError as exc:
            raise BackendUnavailable(f"agent {self.name}: {self.url} did not answer within {self.connect_timeout_s:g}s: is it up (and not hung)?") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise BackendUnavailable(f"agent {self.name}: cannot reach {self.url} ({redact(describe(exc))}): start it or fix url") from exc
        return {}

    async def generate(self, request: GenerateRequest, *, base_url: str | None = None,
                       headers: dict[str, str] | None = None) -> Completion:
        """One turn of the agent (through `base_url` when routed); a turn that fails for good names the agent."""
        try:
            return await super().generate(request, base_url=base_url, headers=headers)
        except BackendUnavailable:
            raise
        except BackendError as exc:
            raise BackendError(f"agent {self.name}: {exc.reason}", retryable=exc.retryable) from None


async def build_http_agent(spec: AgentSpec, pool: Any) -> HTTPAgentBackend:
    """The backend for a `backend: http-agent` spec."""
    return HTTPAgentBackend(spec)


HTTP_AGENT = BackendEntry("http-agent", build_http_agent, capabilities={"continue_user_turn": False, "structured_output": False},
                          requires={"url": "add url: http://127.0.0.1:9000/respond (the agent's endpoint)"}, needs_model=False,
                          own_fields=("url",))
"""Your own agent behind a URL: an OpenAI chat-completions endpoint, or any server keeping the contract above."""
