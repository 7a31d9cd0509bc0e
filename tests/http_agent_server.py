"""An agent server for the HTTP-agent tests: real aiohttp on a free loopback port, answering from a script;
hostile answers (huge, endless, trickling bodies, redirects) and a witness server that must hear nothing."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web


class AgentServer:
    """An agent at /respond whose answers are a script of (status, body) or async callables (given the request);
    it records every body. `routes` adds handlers at other paths of the same server (a same-origin redirect's target)."""

    def __init__(self, script, routes=None):
        self.script, self.bodies, self.headers = list(script), [], []
        self.routes = dict(routes or {})

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.json())
        self.headers.append(dict(request.headers))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if callable(step):
            return await step(request)
        if step == "hang":
            await asyncio.sleep(30)
        status, body = step if isinstance(step, tuple) else (200, step)
        return web.Response(status=status, body=body if isinstance(body, bytes) else json.dumps(body).encode(),
                            content_type="application/json")

    async def __aenter__(self) -> "AgentServer":
        app = web.Application()
        app.router.add_post("/respond", self._respond)
        app.router.add_get("/respond", lambda r: web.Response(status=405))
        for path, handler in self.routes.items():
            app.router.add_route("*", path, handler)
        self._runner = web.AppRunner(app, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/respond"
        return self

    async def __aexit__(self, *exc) -> None:
        await self._runner.cleanup()


    @property
    def origin(self) -> str:
        """`http://127.0.0.1:PORT`, for a redirect within this server."""
        return self.url.rsplit("/", 1)[0]


def huge(size: int, *, declared: bool = True, chunk: int = 1 << 20):
    """A short-form reply of `size` bytes (one long `content`), with its Content-Length or streamed chunked without one."""
    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if declared:
            response.content_length = size
        await response.prepare(request)
        head, tail, block = b'{"content": "', b'"}', b"x" * chunk
        try:
            await response.write(head)
            for start in range(0, size - len(head) - len(tail), chunk):
                await response.write(block[: min(chunk, size - len(head) - len(tail) - start)])
            await response.write(tail)
        except (ConnectionError, RuntimeError):
            pass
        return response
    return answer


def endless(*, chunk: int = 1 << 16, delay_s: float = 0.0):
    """An answer whose chunked body never ends: `chunk` bytes at a time, `delay_s` apart (a trickle when small)."""
    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            while True:
                await response.write(b"x" * chunk)
                await asyncio.sleep(delay_s)
        except (ConnectionError, RuntimeError):
            pass
        return response
    return answer


def redirect(location: str, status: int = 307):
    """An answer pointing elsewhere (a 307 asks the client to send the same POST, body included, there)."""
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": location})
    return answer


class Witness:
    """A server on another port that records every request it gets, at any path: a redirect off the origin must
    leave it with nothing."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []

    async def _any(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path, await request.read()))
        return web.Response(body=json.dumps({"content": "the witness answered"}).encode(), content_type="application/json")

    async def __aenter__(self) -> "Witness":
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._any)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/elsewhere"
        return self

    async def __aexit__(self, *exc) -> None:
        await self._runner.cleanup()
