"""A real OpenAI-compatible server on 127.0.0.1 that plays a τ² episode's script: each side's replies, in order.

The conformance suite runs one script through the native loop and every framework; each framework asks
its model its own way, so the server tells the sides apart by the request's `model` (the assistant's agent
spec names `assistant`, the user's `user`) and answers each side's requests with that side's next reply,
the last one for ever once the script runs out; a request that offers no tools gets the reply's text alone (a
model cannot call tools it was not given). A reply can hold text and tool calls together, and calls
without ids, which the mock server of the benchmarks cannot send.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

SIDES = ("assistant", "user")
"""The model names the two sides' agent specs give, which pick the side's script."""


@dataclass(frozen=True)
class Call:
    """One scripted tool call; `id` None sends the call without an id (as some servers' parsers do)."""

    name: str
    arguments: dict[str, Any]
    id: str | None = ""

    def as_openai(self, fallback_id: str) -> dict[str, Any]:
        """The call as an OpenAI reply carries it: its own id, a generated one (`id` ""), or none (`id` None)."""
        call: dict[str, Any] = {"type": "function", "function": {"name": self.name, "arguments": json.dumps(self.arguments)}}
        if self.id is not None:
            call["id"] = self.id or fallback_id
        return call


@dataclass(frozen=True)
class Reply:
    """One scripted model reply: text, tool calls, or both in one message."""

    text: str | None = None
    calls: tuple[Call, ...] = ()


def say(text: str) -> Reply:
    """A text reply."""
    return Reply(text)


def call(name: str, arguments: dict[str, Any] | None = None, *, text: str | None = None, call_id: str | None = "") -> Reply:
    """A reply with one tool call (and `text` beside it when given)."""
    return Reply(text, (Call(name, arguments or {}, call_id),))


@dataclass
class ScriptServer:
    """The server; `async with ScriptServer(script) as server:` listens and gives `server.base_url`.

    `script` maps each side to its replies; `requests` keeps every request body by side, in order.
    """

    script: dict[str, list[Reply]]
    requests: dict[str, list[dict]] = field(default_factory=lambda: {side: [] for side in SIDES})
    base_url: str = ""
    _runner: web.AppRunner | None = None

    def next_reply(self, side: str) -> Reply:
        """The side's reply to its next request: the script's next, or its last once it has run out."""
        replies = self.script[side]
        return replies[min(len(self.requests[side]) - 1, len(replies) - 1)]

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": side, "object": "model"} for side in SIDES]})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        side = str(body.get("model", "")).removeprefix("openai/")
        if side not in SIDES:
            return web.json_response({"error": {"message": f"unknown model {side!r}"}}, status=404)
        self.requests[side].append(body)
        serial = sum(len(r) for r in self.requests.values())
        reply = self.next_reply(side)
        if not body.get("tools"):
            reply = Reply(reply.text or "I have no tools here.")
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = [c.as_openai(f"call_{serial}_{i}") for i, c in enumerate(reply.calls)]
        words = len((reply.text or "").split()) + sum(1 + len(c.arguments) for c in reply.calls)
        return web.json_response({
            "id": f"script-{serial}", "object": "chat.completion", "created": 0, "model": side,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": words, "total_tokens": 10 + words},
        })

    async def __aenter__(self) -> "ScriptServer":
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
