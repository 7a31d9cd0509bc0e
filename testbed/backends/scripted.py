"""A test double that replays given outputs and records every request it received."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from testbed.backends.base import BackendError, Capabilities, Completion, GenerateRequest
from testbed.transcript import Usage

Responder = Callable[[GenerateRequest], "str | Completion | Exception"]


class ScriptedBackend:
    """Replays outputs in order (or computes them with a function), so tests are deterministic.

    An output that is an Exception instance is raised instead of returned, which lets a test script
    failures at exact points; a Completion is returned as it is (tool calls, say). Only for tests and examples, never for a real run.
    """

    def __init__(
        self,
        outputs: Iterable[str | Completion | Exception] | Responder = (),
        *,
        name: str = "scripted",
        model: str = "scripted",
        capabilities: Capabilities = Capabilities(continue_user_turn=True, structured_output=True),
        delay_s: float = 0.0,
    ):
        self.name = name
        self.model = model
        self.capabilities = capabilities
        self.delay_s = delay_s
        self.requests: list[GenerateRequest] = []
        self._responder = outputs if callable(outputs) else None
        self._outputs = [] if callable(outputs) else list(outputs)

    async def start(self) -> None:
        """Nothing to start."""

    async def generate(self, request: GenerateRequest) -> Completion:
        """Record the request and return the next scripted output."""
        self.requests.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self._responder is not None:
            out: str | Completion | Exception = self._responder(request)
        elif self._outputs:
            out = self._outputs.pop(0)
        else:
            raise BackendError("scripted backend ran out of outputs")
        if isinstance(out, Exception):
            raise out
        if isinstance(out, Completion):
            return out
        return Completion(text=out, finish_reason="stop", usage=Usage(len(request.messages), len(out.split()), self.delay_s))

    async def close(self) -> None:
        """Nothing to close."""
