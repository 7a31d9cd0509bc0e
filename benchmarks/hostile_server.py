"""The hostile HTTP agent of benchmarks/hostile_replies.py: real aiohttp on a free loopback port, in a thread of its own.

At `/respond`, mode `big` answers every POST with one JSON reply in the agent contract's short form
(`{"content": <text>}`); mode `endless` streams a chunked body that opens the same way and never ends,
1 MB per write, for as long as the client keeps reading; `GET` (the testbed's health check) gets a small
200. Beside it, at `/v1`, a polite OpenAI-compatible user model (model `mock`) that takes requests of any
size and always answers "Could you say more?": a simulated user whose requests (the huge reply inside)
go through the wire recorder, so `testbed wire` has them to show.
"""

from __future__ import annotations

import asyncio
import json
import threading

from aiohttp import web

CHUNK = b"x" * 1_000_000
USER_MODEL, USER_REPLY = "mock", "Could you say more?"


class HostileAgentServer:
    """`with HostileAgentServer(mode, text) as server:` listens at `server.url` (the agent) and `server.user_base_url`
    (the user model); `served()` says what it sent."""

    def __init__(self, mode: str, text: str):
        if mode not in ("big", "endless"):
            raise ValueError(f"mode {mode!r}: use big or endless")
        self.mode, self.body = mode, json.dumps({"content": text}).encode()
        self.posts, self.user_posts, self.sent_bytes, self.url, self.user_base_url = 0, 0, 0, "", ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="hostile-agent")
        self._started = threading.Event()

    async def _post(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.posts += 1
        if self.mode == "big":
            self.sent_bytes += len(self.body)
            return web.Response(body=self.body, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await response.write(b'{"content": "')
            while True:
                await response.write(CHUNK)
                self.sent_bytes += len(CHUNK)
        except (ConnectionError, RuntimeError):
            pass
        return response

    async def _get(self, request: web.Request) -> web.Response:
        return web.json_response({"agent": "hostile", "mode": self.mode})

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": USER_MODEL, "object": "model"}]})

    async def _user_turn(self, request: web.Request) -> web.Response:
        await request.read()
        self.user_posts += 1
        return web.json_response({"id": f"user-{self.user_posts}", "object": "chat.completion", "created": 0, "model": USER_MODEL,
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": USER_REPLY},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6}})

    async def _start(self) -> None:
        app = web.Application(client_max_size=1024 * 1024 * 1024)
        app.router.add_post("/respond", self._post)
        app.router.add_get("/respond", self._get)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._user_turn)
        self._runner = web.AppRunner(app, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        origin = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        self.url, self.user_base_url = f"{origin}/respond", f"{origin}/v1"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._started.set()
        self._loop.run_forever()

    def served(self) -> dict:
        """Agent POSTs answered and MB written, and the user model's turns, for the benchmark's JSON."""
        return {"mode": self.mode, "agent_posts": self.posts, "agent_sent_mb": round(self.sent_bytes / 1e6, 1),
                "user_posts": self.user_posts}

    def __enter__(self) -> "HostileAgentServer":
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the hostile agent server did not start within 30 s")
        return self

    def __exit__(self, *exc) -> None:
        cleanup = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
        try:
            cleanup.result(timeout=15)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=15)
