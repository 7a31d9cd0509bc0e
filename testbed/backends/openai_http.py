"""An OpenAI-compatible chat backend on a lean async HTTP client (the hot path of every run).

The SDKs cost ~10 ms of CPU per request (DESIGN.md); a plain aiohttp session costs well under
one, so the testbed never becomes the bottleneck in front of a fast server. Bodies are encoded and
decoded with orjson (a tenth of the stdlib's CPU on a chat body; benchmarks/hot_path.py measures the
whole path), and what does not change between requests (the timeout) is built once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson
from yarl import URL

from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest, describe
from testbed.backends.bounded_read import ReplyRefused, read_bounded
from testbed.backends.openai_reply import MalformedReply, error_excerpt, parse_completion, wire_refusal
from testbed.backends.retry_after import retry_after_s
from testbed.backends.tool_call_text import read_tool_calls
from testbed.backends.vllm_server import tool_calling_flags
from testbed.backends.same_origin import Hop, request_on_origin
from testbed.limits import MAX_REPLY_BYTES
from testbed.redaction import redact, register_secret

TOOL_CALLS = logging.getLogger("testbed.tool_calls")
"""Where a server that drops the calls its model writes as untagged JSON is reported, once per backend."""
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
REJECTED_KEY = {401, 403}
HEALTH_CACHE_S = 2.0


def key_rejected_reason(url: str, status: int, key_env: str | None) -> str:
    """The stop message for a refused key (HTTP 401/403): the URL and the variable to check."""
    where = f"check the key in {key_env}" if key_env else "this server wants a key: set api_key_env in the agent spec"
    return f"{url} refused the API key (HTTP {status}): {where}"


TOOLS_REFUSED = b"enable-auto-tool-choice"
"""What vLLM's refusal of a request with tools says when the server was started without tool calling."""


def tools_refused_reason(url: str) -> str:
    """The stop message for a server that cannot call tools: the URL and the flags (or spec field) that fix it."""
    return (f"{url} refuses tool calls (started without tool calling): restart vLLM with {_tolerant_flags()} "
            "(a managed server: set server.tool_call_parser: tolerant in the agent spec)")


def untagged_calls_reason(url: str, managed: bool) -> str:
    """What to say when a server returned a tool call as text it did not parse (untagged JSON): the flags that read it."""
    fix = ("set server.tool_call_parser: tolerant in the agent spec" if managed
           else f"restart vLLM with {_tolerant_flags()} (its Python must import testbed)")
    return f"{url} returned a tool call as untagged JSON text, which its tool parser did not read (the call is lost): {fix}"


def _tolerant_flags() -> str:
    return " ".join(tool_calling_flags())


def backoff_s(attempt: int, base_s: float, cap_s: float) -> float:
    """The wait before retry `attempt + 1`: capped exponential backoff with jitter (half to all of it)."""
    return min(cap_s, base_s * 2**attempt) * (0.5 + random.random() / 2)


class OpenAICompatibleBackend:
    """Chat completions against any server that speaks the OpenAI API (vLLM above all).

    Concurrency is bounded by a semaphore. Timeouts, connection errors, 429, 5xx and replies the
    testbed cannot read are retried with capped exponential backoff and jitter, honouring a
    server's `Retry-After`; anything else fails the one request with a reason. A timeout is
    retried `timeout_retries` times at most, and a request that fails for good on the transport
    triggers a health check: a server that no longer answers `GET /models` stops the whole run
    (BackendUnavailable) instead of failing every remaining episode one by one. A rejected key
    (401/403) stops the run at once, so it is not sent again for every episode.
    A reply body is read up to `max_reply_bytes` and redirects are followed only within the server's
    origin (testbed.backends.bounded_read, testbed.backends.same_origin): a longer body or a redirect
    elsewhere is the request's error at once, not retried.
    The API key is read from the environment variable whose *name* the spec gives, so the key
    itself never reaches a spec, the store or a log line.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        name: str | None = None,
        api_key_env: str | None = None,
        capabilities: Capabilities = Capabilities(),
        concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        connect_timeout_s: float = 5.0,
        timeout_retries: int = 1,
        max_retry_after_s: float = 60.0,
        diagnose: Callable[[], str | None] | None = None,
        path: str = "chat/completions",
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ):
        self.base_url = base_url.rstrip("/")
        self.path = path
        """What each request is POSTed to, below the base URL (an HTTP agent's own endpoint, testbed.backends.http_agent)."""
        self.diagnose = diagnose
        """Says why the server stopped, when the testbed runs it (its exit code and log), for the stop message."""
        self.model = model
        self.name = name or model
        self.capabilities = capabilities
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.connect_timeout_s = connect_timeout_s
        self.timeout_retries = timeout_retries
        self.max_retry_after_s = max_retry_after_s
        self.max_reply_bytes = max_reply_bytes
        """The longest reply body read; a longer or endless one is the attempt's error (testbed.limits)."""
        self._concurrency = concurrency
        self._semaphore = asyncio.Semaphore(concurrency)
        self._session: aiohttp.ClientSession | None = None
        self._stopped: str | None = None
        self._health_lock = asyncio.Lock()
        self._health_checked = (-HEALTH_CACHE_S, None)
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s)
        self._chat_url = URL(f"{self.base_url}/{path}")
        """Parsed once: aiohttp would parse a string URL again for every request (yarl comes with aiohttp)."""
        self._untagged_calls_told = False

    url_field = "base_url"
    """The spec field that holds the server's URL, named in an error that only a new URL fixes."""

    parse_reply = staticmethod(parse_completion)
    """Reads a 200 reply's decoded body into a Completion, or raises MalformedReply (retried like a fault)."""

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise BackendUnavailable(
                    f"environment variable {self.api_key_env} is empty: export the API key for {self.base_url} under that name"
                )
            register_secret(key)
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=max(self._concurrency * 2, 8))
            self._session = aiohttp.ClientSession(headers=self._headers(), connector=connector)
        return self._session

    def _key_rejected(self, url: str, status: int) -> BackendUnavailable:
        return BackendUnavailable(key_rejected_reason(url, status, self.api_key_env))

    async def _models(self) -> Any:
        """GET /models within the connect timeout: the decoded body, or BackendUnavailable naming the URL."""
        session = await self._ensure_session()
        url = f"{self.base_url}/models"
        try:
            timeout = aiohttp.ClientTimeout(total=self.connect_timeout_s)
            async with request_on_origin(session, "GET", url, fix=self.url_field, timeout=timeout) as resp:
                if resp.status in REJECTED_KEY:
                    raise self._key_rejected(url, resp.status)
                if resp.status != 200:
                    raise BackendUnavailable(f"{url} answered HTTP {resp.status}: is this an OpenAI-compatible server?")
                return json.loads(await read_bounded(resp, self.max_reply_bytes, url))
        except BackendUnavailable:
            raise
        except ReplyRefused as exc:
            raise BackendUnavailable(exc.reason) from None
        except ValueError as exc:
            raise BackendUnavailable(f"{url} answered with a body that is not JSON: is this an OpenAI-compatible server?") from exc
        except asyncio.TimeoutError as exc:
            raise BackendUnavailable(f"{url} did not answer within {self.connect_timeout_s:g}s: is the server up (and not hung)?") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise BackendUnavailable(f"cannot reach {url} ({redact(describe(exc))}): start the server or fix base_url") from exc

    async def start(self) -> None:
        """Check the server answers and serves the model; fail fast, naming the URL, if not."""
        body = await self._models()
        data = body.get("data") if isinstance(body, dict) else None
        served = [m.get("id") for m in data or [] if isinstance(m, dict)] if isinstance(data, list) else []
        if served and self.model not in served:
            raise BackendUnavailable(
                f"{self.base_url} does not serve model {self.model!r}; it serves {served[:10]}: fix `model` in the agent spec"
            )

    async def check_health(self) -> None:
        """Raise BackendUnavailable (and stop every later request) when the server no longer answers."""
        async with self._health_lock:
            checked_at, problem = self._health_checked
            if time.monotonic() - checked_at >= HEALTH_CACHE_S:
                try:
                    await self._models()
                    problem = None
                except BackendUnavailable as exc:
                    problem = exc.reason
                self._health_checked = (time.monotonic(), problem)
        if problem:
            known = self.diagnose() if self.diagnose is not None else None
            self._stopped = f"the server stopped answering during the run: {known or problem}"
            raise BackendUnavailable(self._stopped)

    def _payload(self, request: GenerateRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "top_p": request.top_p,
        }
        if request.seed is not None:
            payload["seed"] = request.seed
        if request.continue_final_message:
            if not self.capabilities.continue_user_turn:
                raise BackendError(f"backend {self.name} cannot continue the final message (raw user mode)")
            payload["add_generation_prompt"] = False
            payload["continue_final_message"] = True
        if request.response_format is not None:
            payload["response_format"] = request.response_format
        if request.tools:
            payload["tools"] = request.tools
            payload["tool_choice"] = "auto"
        payload.update(request.extra)
        return payload

    def _backoff(self, attempt: int) -> float:
        return backoff_s(attempt, self.backoff_base_s, self.backoff_cap_s)

    def routed(self, base_url: str, headers: dict[str, str] | None = None, http_clients=None) -> "RoutedBackend":
        """This backend sending to another base URL with `headers` added (a recording proxy in front of the
        same server), sharing its connections, concurrency limit and health state; `http_clients` are the
        proxy's shared clients that a framework's SDK is given for the route."""
        return RoutedBackend(self, base_url.rstrip("/"), dict(headers or {}), http_clients)

    async def generate(self, request: GenerateRequest, *, base_url: str | None = None,
                       headers: dict[str, str] | None = None) -> Completion:
        """Send one chat completion (to `base_url` with `headers` added when given, else the backend's own);
        retry transient failures; raise BackendError with a reason."""
        if self._stopped:
            raise BackendUnavailable(self._stopped)
        body = _encode(self._payload(request))
        session = await self._ensure_session()
        url = f"{base_url or self.base_url}/{self.path}"
        target = self._chat_url if base_url is None else URL(url)
        timeout = self._timeout
        last_reason, wait, timeouts, transport = "", 0.0, 0, False
        async with self._semaphore:
            for attempt in range(self.max_retries + 1):
                if attempt:
                    await asyncio.sleep(max(wait, self._backoff(attempt - 1)))
                if self._stopped:
                    raise BackendUnavailable(self._stopped)
                started = time.perf_counter()
                wait, transport, hops = 0.0, False, []
                try:
                    async with request_on_origin(session, "POST", target, fix=self.url_field, hops=hops, data=body,
                                                 timeout=timeout, headers=headers) as resp:
                        raw = await read_bounded(resp, self.max_reply_bytes, url)
                        if resp.status == 200:
                            completion = self.parse_reply(_json(raw), time.perf_counter() - started, attempt + 1)
                            if request.tools and not completion.tool_calls and not self._untagged_calls_told:
                                self._tell_untagged_calls(completion.text, url)
                            return completion
                        if base_url is not None and (refused := wire_refusal(raw)) is not None:
                            raise BackendError(refused)
                        last_reason = f"HTTP {resp.status} from {url}{_via(hops)}: {error_excerpt(raw)}"
                        if resp.status in REJECTED_KEY:
                            self._stopped = self._key_rejected(url, resp.status).reason
                            raise BackendUnavailable(self._stopped)
                        if resp.status not in RETRYABLE_STATUS:
                            if request.tools and TOOLS_REFUSED in raw:
                                raise BackendUnavailable(tools_refused_reason(url))
                            raise BackendError(last_reason)
                        wait = retry_after_s(resp.headers.get("Retry-After"))
                        if wait > self.max_retry_after_s:
                            raise BackendError(f"{last_reason} (the server asks to retry after {wait:g}s; run again later)", retryable=True)
                except asyncio.TimeoutError:
                    last_reason, transport = f"timed out after {self.timeout_s:g}s at {url}", True
                    timeouts += 1
                    await self.check_health()
                    if timeouts > self.timeout_retries:
                        break
                except ReplyRefused as exc:
                    raise BackendError(exc.reason) from None
                except MalformedReply as exc:
                    last_reason = f"unreadable reply from {url}{_via(hops)}: {exc}"
                except (aiohttp.ClientError, OSError) as exc:
                    last_reason, transport = f"{redact(describe(exc))} at {url}", True
                except BackendError:
                    raise
                except Exception as exc:  # whatever else a strange reply makes the client raise
                    last_reason = f"unreadable reply from {url}: {redact(describe(exc))[:200]}"
        if transport:
            await self.check_health()
        raise BackendError(f"{last_reason} (gave up after {attempt + 1} attempts)", retryable=True)

    def _tell_untagged_calls(self, text: str, url: str) -> None:
        """Warn once when a reply to a request with tools holds calls as untagged JSON that the server left as text
        (vLLM's `hermes` parser reads tagged calls only): the run goes on, the model's calls are lost until the
        server reads them, and the warning gives the flags or spec field that do."""
        if self.url_field != "base_url" or not read_tool_calls(text).calls:
            return
        self._untagged_calls_told = True
        TOOL_CALLS.warning("%s", untagged_calls_reason(url, managed=self.diagnose is not None))

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class RoutedBackend:
    """An OpenAI-compatible backend's requests sent through another base URL (one episode's route
    through the wire recorder, told apart by its headers); everything else is the backend's own."""

    def __init__(self, inner: OpenAICompatibleBackend, base_url: str, headers: dict[str, str] | None = None, http_clients=None):
        self.inner = inner
        self.base_url = base_url
        self.headers = dict(headers or {})
        self.http_clients = http_clients
        self.name, self.model, self.capabilities = inner.name, inner.model, inner.capabilities
        self.api_key_env = inner.api_key_env

    async def start(self) -> None:
        """Nothing to start: the backend it routes was started by its pool."""

    async def generate(self, request: GenerateRequest) -> Completion:
        """The backend's `generate`, sent to this route."""
        return await self.inner.generate(request, base_url=self.base_url, headers=self.headers or None)

    async def close(self) -> None:
        """Nothing to close: the routed backend's pool closes it."""


def _via(hops: list[Hop]) -> str:
    """Where same-origin redirects took a request, for its error (nothing when none did)."""
    return f" (redirected to {hops[-1].location})" if hops else ""


def _encode(payload: dict[str, Any]) -> bytes:
    """The request body as JSON bytes (the session sends them as application/json)."""
    try:
        return orjson.dumps(payload)
    except TypeError:  # what orjson refuses and the stdlib writes (integers past 64 bits, say)
        return json.dumps(payload).encode()


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except ValueError:
        pass
    try:  # what orjson refuses and the stdlib reads (NaN, integers past 64 bits, UTF-16): read as before
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReply(f"the body is not JSON ({error_excerpt(raw, 80)!r})") from exc
