"""How the wire recorder handles a failed request, so that a framework fails and recovers as the native loop does.

A framework's own client retries what it likes, when it likes (most retry a 500 but not a body that
is not JSON, none stops on a rejected key). Every framework request passes the recorder, so the
recorder applies the native backend's rules (testbed.backends.openai_http) to all of them: 5xx,
408/409/429 (honouring `Retry-After`), resets, closed connections, timeouts and 200 replies that are
not a readable completion (not JSON, no choices, or text with a lone surrogate, which the SDKs cannot
encode again when they send the conversation on) are retried with capped, jittered exponential backoff;
a 401/403 stops every later request at once with the native message naming the key's variable; what still fails is
answered as a 502 whose message is the native reason ("… (gave up after N attempts)").
Replies are bounded as the native backend bounds them: a body past the agent's `max_reply_bytes` is cut
off there, and a redirect is followed only within the server's origin (each one kept, for the wire log);
either refusal is final, never retried, and answered in a body the native backend takes as its error.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from testbed.backends.base import describe
from testbed.backends.bounded_read import ReplyRefused, read_bounded
from testbed.backends.openai_http import REJECTED_KEY, RETRYABLE_STATUS, backoff_s, key_rejected_reason
from testbed.backends.openai_reply import error_excerpt, refused_body
from testbed.backends.retry_after import retry_after_s
from testbed.backends.same_origin import Hop, request_on_origin
from testbed.limits import MAX_REPLY_BYTES
from testbed.redaction import redact


PASSTHROUGH_MARGIN_S = 5.0
"""How much longer than the native backend's own timeout a passed-through request may take upstream: the backend
decides, and the recorder stops reading soon after, so a trickling body cannot hold a handler (and the run's end)."""


@dataclass(frozen=True)
class RetryPolicy:
    """One route's fault handling: the native backend's settings for the server it forwards to."""

    retries: int = 0
    """Attempts after the first."""
    passthrough: bool = False
    """Forward once and answer what came back as it came (the native loop's routed requests, which it retries itself)."""
    timeout_s: float = 120.0
    connect_timeout_s: float = 5.0
    timeout_retries: int = 1
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    max_retry_after_s: float = 60.0
    key_env: str | None = None
    """The environment variable the key came from, named when the server refuses it."""
    max_reply_bytes: int = MAX_REPLY_BYTES
    """The longest reply body read from the server (the agent spec's `max_reply_bytes`)."""
    url_field: str = "base_url"
    """The agent spec's field holding the server's URL, named when a redirect off its origin is refused."""

    @classmethod
    def of(cls, backend, *, retry: bool = True) -> "RetryPolicy":
        """The policy of an OpenAI-compatible backend (its retries only when `retry`)."""
        inner = getattr(backend, "inner", backend)
        get = lambda name, default: getattr(inner, name, default)  # noqa: E731
        timeout_s = get("timeout_s", 120.0) + (0.0 if retry else PASSTHROUGH_MARGIN_S)
        return cls(get("max_retries", 4) if retry else 0, not retry, timeout_s, get("connect_timeout_s", 5.0),
                   get("timeout_retries", 1), get("backoff_base_s", 0.5), get("backoff_cap_s", 8.0),
                   get("max_retry_after_s", 60.0), get("api_key_env", None), get("max_reply_bytes", MAX_REPLY_BYTES),
                   get("url_field", "base_url"))

    def client_timeout_s(self) -> float:
        """How long a framework's client may wait for the recorder's answer: every attempt, wait and backoff."""
        per_attempt = self.timeout_s + max(self.max_retry_after_s, self.backoff_cap_s)
        return per_attempt * (self.retries + 1) + 30.0


@dataclass(frozen=True)
class Attempt:
    """One request as sent upstream and what came back (a transport failure as a 502/504 with its reason)."""

    status: int
    body: bytes
    content_type: str
    latency_s: float
    sent_at: float
    reason: str | None = None
    """Why this attempt did not count as an answer; None when it did (or when it is passed on as it is)."""
    retry_after_s: float = 0.0
    timed_out: bool = False
    hops: tuple[Hop, ...] = ()
    """The redirects on the way, in order (the last one refused when `refused` says a redirect was)."""
    refused: str | None = None
    """Why the reply was refused for good (too long, redirected off the origin): answered at once, never retried."""


@dataclass(frozen=True)
class Answer:
    """What the recorder answers the framework's client."""

    status: int
    body: bytes
    content_type: str = "application/json"
    gave_up: str | None = None
    """The native reason when every attempt failed; None otherwise."""
    rejected: str | None = None
    """The native stop message when the server refused the key."""


def error_body(message: str) -> bytes:
    """An OpenAI-style error body, the way the SDKs read a server's message."""
    return json.dumps({"error": {"message": message, "type": "testbed_wire"}}).encode()


def unreadable(body: bytes) -> str | None:
    """Why a 200 chat-completion body is not a completion a client can read; None when it is one."""
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return f"the body is not JSON ({error_excerpt(body, 80)!r})"
    if not isinstance(decoded, dict):
        return f"the body is JSON but not an object ({type(decoded).__name__})"
    choices = decoded.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "the reply has no choices"
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(content[exc.start])
            return f"the reply holds a lone surrogate (U+{code:04X}), which a framework's client cannot send back in its next request"
    return None


async def send_once(session: aiohttp.ClientSession, method: str, url: str, body: bytes, headers: dict[str, str],
                    policy: RetryPolicy, check: Callable[[bytes], str | None] | None) -> Attempt:
    """Send one request upstream within the policy's timeout; every failure is an Attempt with its reason."""
    sent_at, started = time.time(), time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=policy.timeout_s, sock_connect=policy.connect_timeout_s)
    hops: list[Hop] = []
    try:
        async with request_on_origin(session, method, url, fix=policy.url_field, hops=hops, data=body or None,
                                     headers=headers, timeout=timeout) as upstream:
            raw = await read_bounded(upstream, policy.max_reply_bytes, url)
            status, content_type = upstream.status, upstream.headers.get("Content-Type", "application/json")
            wait = retry_after_s(upstream.headers.get("Retry-After"))
    except asyncio.TimeoutError:
        reason = f"timed out after {policy.timeout_s:g}s at {url}"
        return Attempt(504, error_body(reason), "application/json", time.perf_counter() - started, sent_at, reason,
                       timed_out=True, hops=tuple(hops))
    except ReplyRefused as exc:
        return Attempt(502, refused_body(exc.reason), "application/json", time.perf_counter() - started, sent_at, exc.reason,
                       hops=tuple(hops), refused=exc.reason)
    except (aiohttp.ClientError, OSError) as exc:
        reason = f"{redact(describe(exc))} at {url}"
        return Attempt(502, error_body(f"the wire recorder could not reach {url}: {reason}"), "application/json",
                       time.perf_counter() - started, sent_at, reason, hops=tuple(hops))
    latency = time.perf_counter() - started
    reason = None
    if status == 200:
        problem = check(raw) if check is not None else None
        reason = f"unreadable reply from {url}: {problem}" if problem else None
    elif status in RETRYABLE_STATUS or status in REJECTED_KEY:
        reason = f"HTTP {status} from {url}: {error_excerpt(raw)}"
    return Attempt(status, raw, content_type, latency, sent_at, reason, wait, hops=tuple(hops))


async def forward(session: aiohttp.ClientSession, method: str, url: str, body: bytes, headers: dict[str, str], policy: RetryPolicy,
                  check: Callable[[bytes], str | None] | None, sent: Callable[[Attempt], None],
                  stopped: Callable[[], str | None]) -> Answer:
    """Send with the native backend's retries; `sent` sees every attempt, `stopped` says whether the run's key was refused."""
    timeouts = 0
    attempt: Attempt | None = None
    tries = 0
    for tries in range(1, policy.retries + 2):
        if attempt is not None:
            await asyncio.sleep(max(attempt.retry_after_s, backoff_s(tries - 2, policy.backoff_base_s, policy.backoff_cap_s)))
        if (refused := stopped()) is not None:
            return Answer(401, error_body(refused), rejected=refused)
        attempt = await send_once(session, method, url, body, headers, policy, check)
        sent(attempt)
        if policy.passthrough:
            return Answer(attempt.status, attempt.body, attempt.content_type)
        if attempt.refused is not None:
            return Answer(attempt.status, attempt.body, attempt.content_type, gave_up=attempt.refused)
        if attempt.status in REJECTED_KEY:
            refused = key_rejected_reason(url, attempt.status, policy.key_env)
            return Answer(attempt.status, error_body(refused), rejected=refused)
        if attempt.reason is None:
            return Answer(attempt.status, attempt.body if attempt.status == 200 else redact_body(attempt.body), attempt.content_type)
        if attempt.retry_after_s > policy.max_retry_after_s:
            reason = f"{attempt.reason} (the server asks to retry after {attempt.retry_after_s:g}s; run again later)"
            return Answer(502, error_body(reason), gave_up=reason)
        timeouts += attempt.timed_out
        if timeouts > policy.timeout_retries:
            break
    assert attempt is not None and attempt.reason is not None
    reason = f"{attempt.reason} (gave up after {tries} attempts)"
    return Answer(502, error_body(reason), gave_up=reason)


def redact_body(body: bytes) -> bytes:
    """An error body with keys redacted, so a server that echoes the key does not hand it to a framework's logger."""
    text = body.decode("utf-8", errors="replace")
    cleaned = redact(text)
    return body if cleaned == text else cleaned.encode()
