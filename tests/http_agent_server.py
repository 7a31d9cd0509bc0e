"""An agent server for the HTTP-agent tests: real aiohttp on a free loopback port, answering from a script."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web


class AgentServer:
    """An agent at /respond whose answers are a script of (status, body) or callables; it records every body."""

    def __init__(self, script):
        self.script, self.bodies, self.headers = list(script), [], []

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.json())
        self.headers.append(dict(request.headers))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if step == "hang":
            await asyncio.sleep(30)
        status, body = step if isinstance(step, tuple) else (200, step)
        return web.Response(status=status, body=body if isinstance(body, bytes) else json.dumps(body).encode(),
                            content_type="application/json")

    async def __aenter__(self) -> "AgentServer":
        app = web.Application()
        app.router.add_post("/respond", self._respond)
        app.router.add_get("/respond", lambda r: web.Response(status=405))
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/respond"
        return self

    async def __aexit__(self, *exc) -> None:
        await self._runner.cleanup()
