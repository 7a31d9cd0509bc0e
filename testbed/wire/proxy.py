"""A recording HTTP proxy in front of OpenAI-compatible servers, and the place framework faults are handled.

Frameworks build their own HTTP clients (httpx inside the OpenAI SDK, aiohttp in the testbed), so
the only place every request of every framework can be seen as sent is the wire. Each participant
role has one base URL on the recorder, `http://127.0.0.1:PORT/wire/ROLE`, the same for every
episode, so a framework's clients are built once and shared (the recorder holds the httpx clients
they are given); an episode's requests are told apart by the `X-Testbed-Tap` header its clients
send. Each tap forwards its roles to their servers with the fault handling of testbed.wire.faults,
and every chat completion attempt that passes is kept with the tap (request body, status, response
body, latency) until the episode takes it, each redirect on its way as a record of its own (its status
and where it pointed). A forward whose client went away is cancelled, and closing the recorder cancels
those still in flight, so a server that trickles its body cannot hold the run's end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from testbed.backends.same_origin import Hop, next_request
from testbed.redaction import register_secret
from testbed.store.records import WireRecord
from testbed.wire.faults import Attempt, RetryPolicy, error_body, forward, unreadable

FORWARDED_HEADERS = ("Authorization", "Content-Type", "Accept", "OpenAI-Organization", "OpenAI-Project")
TAP_HEADER = "X-Testbed-Tap"
RECORDED_PATH = "chat/completions"
SHUTDOWN_S = 2.0
"""How long closing the recorder waits for its handlers, once the forwards in flight are cancelled."""


@dataclass(frozen=True)
class Upstream:
    """Where one role's requests go and how their faults are handled."""

    base_url: str
    policy: RetryPolicy
    recorded_path: str = "chat/completions"
    """The path whose POSTs are kept in the wire log (an HTTP agent's endpoint has its own)."""


@dataclass
class EpisodeTap:
    """One episode's routes through the recorder and the requests recorded on them so far."""

    recorder: "WireRecorder"
    token: str
    retry: bool = True
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    records: list[WireRecord] = field(default_factory=list)
    gave_up: str | None = None
    """The native reason of the last request the recorder gave up on (None once a later one is answered)."""

    @property
    def headers(self) -> dict[str, str]:
        """The headers that put a request on this tap."""
        return {TAP_HEADER: self.token}

    def route(self, role: str, upstream_base_url: str, policy: RetryPolicy | None = None, recorded_path: str = RECORDED_PATH) -> str:
        """The base URL that sends `role`'s requests (with this tap's headers) to `upstream_base_url` through the recorder;
        POSTs to `recorded_path` are recorded."""
        self.upstreams[role] = Upstream(upstream_base_url.rstrip("/"), policy or RetryPolicy(passthrough=True), recorded_path.strip("/"))
        return f"{self.recorder.url}/wire/{role}"

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
        self._http_clients: tuple[Any, Any] | None = None
        self._in_flight: set[asyncio.Task] = set()
        self.url = ""
        self.rejected: str | None = None
        """The native stop message once a server refused the key: no later request is sent."""

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port) and open the forwarding client."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/wire/{role}/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=SHUTDOWN_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def close(self) -> None:
        """Cancel the forwards in flight, stop listening and close the forwarding client and the clients handed to
        frameworks."""
        for work in list(self._in_flight):
            work.cancel()
        if self._in_flight:
            await asyncio.wait(list(self._in_flight), timeout=SHUTDOWN_S)
        if self._http_clients is not None:
            sync, async_ = self._http_clients
            sync.close()
            await async_.aclose()
            self._http_clients = None
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> "WireRecorder":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def http_clients(self):
        """The (sync, async) httpx clients every framework SDK client on this recorder is given: built once per
        run, so no episode builds connection pools or SSL contexts of its own."""
        if self._http_clients is None:
            import httpx

            limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
            self._http_clients = (httpx.Client(limits=limits, timeout=None), httpx.AsyncClient(limits=limits, timeout=None))
        return self._http_clients

    def open_tap(self, *, retry: bool = True) -> EpisodeTap:
        """A new tap for one episode; `retry` applies the native fault handling to its requests (a framework's),
        else each is forwarded once and answered as it came (the native loop's own, which it retries itself)."""
        tap = EpisodeTap(self, secrets.token_hex(8), retry)
        self._taps[tap.token] = tap
        return tap

    def close_tap(self, token: str) -> None:
        """Forget a tap: later requests on its routes are refused."""
        self._taps.pop(token, None)

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        tap = self._taps.get(request.headers.get(TAP_HEADER, ""))
        role, path = request.match_info["role"], request.match_info["path"]
        if tap is None or role not in tap.upstreams:
            return _error(404, f"no open wire route {request.path}: the episode it belonged to has ended")
        body = await request.read()
        upstream = tap.upstreams[role]
        url = f"{upstream.base_url}/{path}"
        if request.query_string:
            url += f"?{request.query_string}"
        headers = {k: v for k in FORWARDED_HEADERS if (v := request.headers.get(k)) is not None}
        _register_key(headers)
        recorded = path.rstrip("/").endswith(upstream.recorded_path)
        check = unreadable if recorded and request.method == "POST" and not _streams(body) else None

        def sent(attempt: Attempt) -> None:
            if recorded:
                tap.records.extend(_attempt_records(self._seq, role, upstream.base_url, path, body, attempt))

        assert self._session is not None
        work = asyncio.ensure_future(forward(self._session, request.method, url, body, headers, upstream.policy, check, sent,
                                             lambda: self.rejected if tap.retry else None))
        self._in_flight.add(work)
        try:
            answer = await work
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            return _error(503, f"the run ended while {url} was still answering: the wire recorder stopped forwarding")
        finally:
            self._in_flight.discard(work)
        if answer.rejected and tap.retry:
            self.rejected = answer.rejected
        if recorded:
            tap.gave_up = answer.gave_up
        return web.Response(body=answer.body, status=answer.status, headers={"Content-Type": answer.content_type})


def _error(status: int, message: str) -> web.Response:
    return web.Response(body=error_body(message), status=status, headers={"Content-Type": "application/json"})


def _decoded(raw: bytes) -> Any:
    """A body as JSON when it is JSON, else as text (a streamed or broken body is kept as sent)."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw.decode("utf-8", errors="replace")


def _record(seq: int, role: str, path: str, body: bytes, attempt: Attempt) -> WireRecord:
    response = _decoded(attempt.body)
    usage = response.get("usage") if isinstance(response, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return WireRecord(seq=seq, role=role, path=path, request=_decoded(body), status=attempt.status, response=response,
                      prompt_tokens=_count(usage.get("prompt_tokens")), completion_tokens=_count(usage.get("completion_tokens")),
                      latency_s=attempt.latency_s, sent_at=attempt.sent_at)


def _attempt_records(seq: Iterator[int], role: str, base_url: str, path: str, body: bytes, attempt: Attempt) -> list[WireRecord]:
    """One attempt as wire records numbered from `seq`: each redirect on its way, then the answer at the end of them
    (none when the last redirect was refused, since nothing was sent where it pointed)."""
    records = [_hop_record(next(seq), role, base_url, hop, attempt.refused) for hop in attempt.hops]
    if attempt.hops and not attempt.hops[-1].followed:
        return records
    if attempt.hops:
        last = attempt.hops[-1]
        path, body = _below(base_url, last.location), next_request(last.status, last.method, last.body)[1] or b""
    return [*records, _record(next(seq), role, path, body, attempt)]


def _below(base_url: str, url: str) -> str:
    """A URL as a wire record's path: below the route's base URL when it is there, else its whole path."""
    base = base_url.rstrip("/") + "/"
    return url[len(base):] if url.startswith(base) else str(URL(url).path_qs)


def _hop_record(seq: int, role: str, base_url: str, hop: Hop, refused: str | None) -> WireRecord:
    """A redirect as a record: what was sent where, its status, and where it pointed (why not, when not followed)."""
    response: dict[str, Any] = {"location": hop.location, "followed": hop.followed}
    if not hop.followed and refused is not None:
        response["refused"] = refused
    return WireRecord(seq=seq, role=role, path=_below(base_url, hop.url), request=_decoded(hop.body or b""), status=hop.status,
                      response=response, prompt_tokens=None, completion_tokens=None, latency_s=hop.latency_s, sent_at=hop.sent_at)


def _streams(body: bytes) -> bool:
    """Whether a request asks for a streamed reply (whose body is events, not one JSON completion)."""
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict) and decoded.get("stream") is True


def _register_key(headers: dict[str, str]) -> None:
    """Remember the key a framework's client sent, so it is redacted wherever a server echoes it."""
    scheme, _, key = headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        register_secret(key.strip())


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
