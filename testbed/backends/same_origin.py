"""Following redirects without leaving the origin: a server may move a path, never hand the conversation elsewhere.

An HTTP client follows a redirect wherever it points, and a 307 or 308 sends the POST body again:
the whole conversation would reach another host, and that host's answer would be stored as the
agent's. So the testbed's clients (model backends, HTTP agents, the wire recorder) send with
redirects off and follow them here: a redirect to the same scheme, host and port is followed (at
most MAX_REDIRECTS of them, each one logged on the `testbed.redirects` logger and kept as a Hop for
the wire log), and one anywhere else is refused before anything is sent there.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from testbed.backends.bounded_read import ReplyRefused

MAX_REDIRECTS = 5
"""Same-origin redirects followed for one request; one more is refused as a loop."""
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
REDIRECTS = logging.getLogger("testbed.redirects")
"""Where each followed redirect is logged (the wire log keeps them too when the run records one)."""


class RedirectRefused(ReplyRefused):
    """A redirect off the origin (or one too many); nothing was sent to where it pointed."""


@dataclass(frozen=True)
class Hop:
    """One redirect as it came back: what was sent where, and where it pointed."""

    method: str
    url: str
    body: bytes | None
    status: int
    location: str
    """The absolute URL the redirect pointed to."""
    followed: bool
    sent_at: float
    latency_s: float


def origin_of(url: URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (the scheme's default when none is written): what a redirect must keep."""
    return (url.scheme.lower(), (url.host or "").lower(), url.port)


def off_origin_reason(url: str, target: str, fix: str) -> str:
    """The error for a refused redirect, naming both URLs and the spec field to fix."""
    return f"{url} redirected to {target} (another origin); the testbed does not follow redirects off the origin: fix {fix}"


def _target(current: URL, location: str, fix: str) -> URL:
    try:
        return current.join(URL(location))
    except (ValueError, TypeError):
        raise RedirectRefused(f"{current} redirected to an unreadable Location {location[:200]!r}: fix {fix}") from None


def next_request(status: int, method: str, data: Any) -> tuple[str, Any]:
    """What the next hop sends, as browsers and aiohttp do: a 303 (a 301 or 302 after a POST) becomes a GET without
    a body; a 307 or 308 repeats the request, body included."""
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        return "GET", None
    return method, data


@contextlib.asynccontextmanager
async def request_on_origin(session: aiohttp.ClientSession, method: str, url: str | URL, *, fix: str,
                            hops: list[Hop] | None = None, data: Any = None, **kwargs: Any) -> AsyncIterator[aiohttp.ClientResponse]:
    """The final response to `method url`, following same-origin redirects; raises RedirectRefused for one off the
    origin (or past MAX_REDIRECTS), naming both URLs and `fix`, the spec field that holds the URL. Each redirect
    is appended to `hops` when given. `kwargs` go to every request (headers, timeout)."""
    hops = [] if hops is None else hops
    current = url if isinstance(url, URL) else URL(url)
    while True:
        sent_at, started = time.time(), time.perf_counter()
        response = await session.request(method, current, data=data, allow_redirects=False, **kwargs)
        location = response.headers.get("Location") if response.status in REDIRECT_STATUSES else None
        if location is None:
            async with response:
                yield response
            return
        response.close()
        target = _target(current, location, fix)
        followed = origin_of(target) == origin_of(current) and len(hops) < MAX_REDIRECTS
        hops.append(Hop(method, str(current), data if isinstance(data, bytes) else None, response.status, str(target),
                        followed, sent_at, time.perf_counter() - started))
        if origin_of(target) != origin_of(current):
            where = str(current) if not hops[:-1] else f"{url} (redirected to {current})"
            raise RedirectRefused(off_origin_reason(where, str(target), fix))
        if not followed:
            raise RedirectRefused(f"{url} redirected more than {MAX_REDIRECTS} times (last to {target}): fix {fix}")
        REDIRECTS.info("HTTP %s: %s redirected to %s (same origin, followed)", response.status, current, target)
        method, data = next_request(response.status, method, data)
        current = target
