"""Any provider litellm knows (`openai/gpt-4o-mini`, `anthropic/...`, ...), imported only when used."""

from __future__ import annotations

import asyncio
import os
import time
import warnings
from typing import Any

from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest
from testbed.backends.openai_reply import MalformedReply, parse_completion
from testbed.redaction import redact, register_secret


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise BackendUnavailable("backend `litellm` needs the litellm package: install the project with the `providers` extra") from exc
    litellm.suppress_debug_info = True
    # An odd reply makes litellm's own models warn on every dump; the testbed reports that reply itself.
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
    return litellm


class LiteLLMBackend:
    """Chat completions through litellm, for providers that need their own SDK or auth.

    litellm does its own retries (`num_retries`); the testbed bounds concurrency and turns every
    failure into a BackendError with a reason. It cannot continue the user turn; structured output
    is passed through as `response_format`.
    """

    def __init__(self, *, model: str, name: str | None = None, api_key_env: str | None = None, base_url: str | None = None,
                 concurrency: int = 8, timeout_s: float = 120.0, max_retries: int = 4, structured_output: bool = True):
        self.model = model
        self.name = name or model
        self.capabilities = Capabilities(continue_user_turn=False, structured_output=structured_output)
        self.api_key_env = api_key_env
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._semaphore = asyncio.Semaphore(concurrency)
        self._module: Any = None

    def _key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise BackendUnavailable(f"environment variable {self.api_key_env} is empty: export the API key for {self.model} under that name")
        register_secret(key)
        return key

    async def start(self) -> None:
        """Import litellm and check the key variable; providers are reached on the first request."""
        self._module = _litellm()
        self._key()

    async def generate(self, request: GenerateRequest) -> Completion:
        """One completion through litellm."""
        if request.continue_final_message:
            raise BackendError(f"backend {self.name} (litellm) cannot continue the final message (raw user mode)")
        kwargs: dict[str, Any] = {
            "model": self.model, "messages": request.messages, "temperature": request.temperature,
            "max_tokens": request.max_tokens, "top_p": request.top_p, "timeout": self.timeout_s,
            "num_retries": self.max_retries, "api_key": self._key(), "api_base": self.base_url,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        if request.tools:
            kwargs["tools"], kwargs["tool_choice"] = request.tools, "auto"
        kwargs.update(request.extra)
        async with self._semaphore:
            started = time.perf_counter()
            try:
                response = await self._module.acompletion(**kwargs)
            except Exception as exc:  # litellm maps every provider error onto its own exception types
                reason = redact(f"{type(exc).__name__} from {self.model}: {str(exc)[:300]}")
                if type(exc).__name__ in ("AuthenticationError", "PermissionDeniedError"):
                    raise BackendUnavailable(f"{reason}: check the key in {self.api_key_env or 'the provider settings'}") from exc
                raise BackendError(reason) from exc
        body = response.model_dump(warnings=False) if hasattr(response, "model_dump") else response
        try:
            return parse_completion(body, time.perf_counter() - started, 1)
        except MalformedReply as exc:
            raise BackendError(f"unreadable reply from {self.model}: {exc}") from exc

    async def close(self) -> None:
        """Nothing to release (litellm keeps its own clients)."""
