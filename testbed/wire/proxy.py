"""A recording HTTP proxy in front of OpenAI-compatible servers.

Frameworks build their own HTTP clients (httpx inside the OpenAI SDK, aiohttp in the testbed), so
the only place every request of every framework can be seen as sent is the wire. Each episode opens
a tap; each of its participants gets a base URL of the form `http://127.0.0.1:PORT/wire/TAP/ROLE`
that forwards to that participant's server unchanged, and every chat completion that passes is kept
with the tap (request body, status, response body, latency) until the episode takes it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from testbed.store.records import WireRecord

FORWARDED_HEADERS = ("Authorization", "Content-Type", "Accept", "OpenAI-Organization", "OpenAI-Project")
RECORDED_PATH = "chat/completions"
UPSTREAM_TIMEOUT_S = 900.0


@dataclass
class EpisodeTap:
    """One episode's routes through the recorder and the requests recorded on them so far."""

    recorder: "WireRecorder"
    token: str
    upstreams: dict[str, str] = field(default_factory=dict)
    records: list[WireRecord] = field(default_factory=list)

    def route(self, role: str, upstream_base_url: str) -> str:
        """The base URL that sends `role`'s requests to `upstream_base_url` through the recorder."""
        self.upstreams[role] = upstream_base_url.rstrip("/")
        return f"{self.recorder.url}/wire/{self.token}/{role}"

    def take(self) -> list[WireRecord]:
        """The recorded requests, in the order they were sent; the tap is closed."""
        self.recorder.close_tap(self.token)
        return list(self.records)


class WireRecorder:
    """The proxy server, on a free loopback port; an async context manager (started on enter)."""

    def __init__(self) -> None:
        self._taps: dict[str, EpisodeTap] = {}
        self._seq = itertools.count()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port) and open the forwarding client."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/wire/{token}/{role}/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                              timeout=aiohttp.ClientTimeout(total=UPSTREAM_TIMEOUT_S))

    async def close(self) -> None:
        """Stop listening and close the forwarding client."""
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> "WireRecorder":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def open_tap(self) -> EpisodeTap:
        """A new tap for one episode."""
        tap = EpisodeTap(self, secrets.token_hex(8))
        self._taps[tap.token] = tap
        return tap

    def close_tap(self, token: str) -> None:
        """Forget a tap: later requests on its routes are refused."""
        self._taps.pop(token, None)

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        tap = self._taps.get(request.match_info["token"])
        role, path = request.match_info["role"], request.match_info["path"]
        if tap is None or role not in tap.upstreams:
            return _error(404, f"no open wire route {request.path}: the episode it belonged to has ended")
        body = await request.read()
        url = f"{tap.upstreams[role]}/{path}"
        if request.query_string:
            url += f"?{request.query_string}"
        headers = {k: v for k in FORWARDED_HEADERS if (v := request.headers.get(k)) is not None}
        sent_at, started = time.time(), time.perf_counter()
        assert self._session is not None
        try:
            async with self._session.request(request.method, url, data=body or None, headers=headers) as upstream:
                raw = await upstream.read()
                status, content_type = upstream.status, upstream.headers.get("Content-Type", "application/json")
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
            raw = json.dumps({"error": {"message": f"the wire recorder could not reach {url}: {type(exc).__name__}: {exc}"}}).encode()
            status, content_type = 502, "application/json"
        if path.rstrip("/").endswith(RECORDED_PATH):
            tap.records.append(_record(next(self._seq), role, path, body, status, raw, time.perf_counter() - started, sent_at))
        return web.Response(body=raw, status=status, headers={"Content-Type": content_type})


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message}}, status=status)


def _decoded(raw: bytes) -> Any:
    """A body as JSON when it is JSON, else as text (a streamed or broken body is kept as sent)."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw.decode("utf-8", errors="replace")


def _record(seq: int, role: str, path: str, body: bytes, status: int, raw: bytes, latency_s: float, sent_at: float) -> WireRecord:
    response = _decoded(raw)
    usage = response.get("usage") if isinstance(response, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return WireRecord(seq=seq, role=role, path=path, request=_decoded(body), status=status, response=response,
                      prompt_tokens=_count(usage.get("prompt_tokens")), completion_tokens=_count(usage.get("completion_tokens")),
                      latency_s=latency_s, sent_at=sent_at)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
