"""An OpenAI-compatible chat backend on a lean async HTTP client (the hot path of every run).

The SDKs cost ~10 ms of CPU per request (DESIGN.md); a plain aiohttp session costs well under
one, so the testbed never becomes the bottleneck in front of a fast server.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

import aiohttp

from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest
from testbed.transcript import Usage

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAICompatibleBackend:
    """Chat completions against any server that speaks the OpenAI API (vLLM above all).

    Concurrency is bounded by a semaphore; timeouts, connection errors, 429 and 5xx are retried
    with capped exponential backoff and jitter; anything else fails the one request with a reason.
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
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = name or model
        self.capabilities = capabilities
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.connect_timeout_s = connect_timeout_s
        self._concurrency = concurrency
        self._semaphore = asyncio.Semaphore(concurrency)
        self._session: aiohttp.ClientSession | None = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise BackendUnavailable(
                    f"environment variable {self.api_key_env} is empty: export the API key for {self.base_url} under that name"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=max(self._concurrency * 2, 8))
            self._session = aiohttp.ClientSession(headers=self._headers(), connector=connector)
        return self._session

    async def start(self) -> None:
        """Check the server answers and serves the model; fail fast, naming the URL, if not."""
        session = await self._ensure_session()
        url = f"{self.base_url}/models"
        try:
            timeout = aiohttp.ClientTimeout(total=self.connect_timeout_s)
            async with session.get(url, timeout=timeout) as resp:
                if resp.status in (401, 403):
                    raise BackendUnavailable(f"{url} refused the API key (HTTP {resp.status}): check {self.api_key_env}")
                if resp.status != 200:
                    raise BackendUnavailable(f"{url} answered HTTP {resp.status}: is this an OpenAI-compatible server?")
                body = await resp.json(content_type=None)
        except ValueError as exc:
            raise BackendUnavailable(f"{url} answered with a body that is not JSON: is this an OpenAI-compatible server?") from exc
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise BackendUnavailable(
                f"cannot reach {url} ({type(exc).__name__}: {exc or 'timed out'}): start the server or fix base_url"
            ) from exc
        data = body.get("data") if isinstance(body, dict) else None
        served = [m.get("id") for m in data or [] if isinstance(m, dict)]
        if served and self.model not in served:
            raise BackendUnavailable(
                f"{self.base_url} does not serve model {self.model!r}; it serves {served}: fix `model` in the agent spec"
            )

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
        payload.update(request.extra)
        return payload

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_cap_s, self.backoff_base_s * 2**attempt) * (0.5 + random.random() / 2)

    async def generate(self, request: GenerateRequest) -> Completion:
        """Send one chat completion; retry transient failures; raise BackendError with a reason."""
        payload = self._payload(request)
        session = await self._ensure_session()
        url = f"{self.base_url}/chat/completions"
        timeout = aiohttp.ClientTimeout(total=self.timeout_s, sock_connect=self.connect_timeout_s)
        last_reason = ""
        async with self._semaphore:
            for attempt in range(self.max_retries + 1):
                if attempt:
                    await asyncio.sleep(self._backoff(attempt - 1))
                started = time.perf_counter()
                try:
                    async with session.post(url, json=payload, timeout=timeout) as resp:
                        if resp.status == 200:
                            try:
                                body = await resp.json(content_type=None)
                            except ValueError as exc:
                                raise BackendError(f"malformed completion body (not JSON) from {url}") from exc
                            return _completion(body, time.perf_counter() - started, attempt + 1)
                        text = (await resp.text())[:300]
                        last_reason = f"HTTP {resp.status} from {url}: {text}"
                        if resp.status not in RETRYABLE_STATUS:
                            raise BackendError(last_reason)
                except asyncio.TimeoutError:
                    last_reason = f"timed out after {self.timeout_s:g}s at {url}"
                except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as exc:
                    last_reason = f"{type(exc).__name__} at {url}: {exc}"
        raise BackendError(f"{last_reason} (gave up after {self.max_retries + 1} attempts)", retryable=True)

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def _completion(body: dict[str, Any], latency_s: float, attempts: int) -> Completion:
    try:
        choice = body["choices"][0]
        text = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BackendError(f"malformed completion body: {str(body)[:200]}") from exc
    usage = body.get("usage") or {}
    return Completion(
        text=text,
        finish_reason=choice.get("finish_reason"),
        usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), latency_s),
        attempts=attempts,
    )
