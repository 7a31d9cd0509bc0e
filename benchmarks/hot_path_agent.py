"""The agent behind the hot-path benchmark's `python agent` row: each turn forwarded to the mock server through the
testbed's own OpenAI-compatible backend, so what the row adds over the `testbed` row is the callable path alone
(the turn built, the episode's instance found, the call awaited under its timeout, the reply read back)."""

from __future__ import annotations

from testbed.backends.agent_protocol import AgentTurn
from testbed.backends.base import Completion, GenerateRequest
from testbed.backends.openai_http import OpenAICompatibleBackend

_SHARED: dict[str, OpenAICompatibleBackend] = {}


class ForwardingAgent:
    """A per-episode agent that sends its turn as the native assistant would, over one client shared by all episodes."""

    def __init__(self, base_url: str, concurrency: int = 1000):
        if base_url not in _SHARED:
            _SHARED[base_url] = OpenAICompatibleBackend(base_url=base_url, model="mock", concurrency=concurrency)
        self.backend = _SHARED[base_url]

    async def respond(self, turn: AgentTurn) -> Completion:
        """The mock model's reply to the conversation as the agent sees it."""
        s = turn.sampling
        return await self.backend.generate(GenerateRequest(turn.messages, temperature=s["temperature"], max_tokens=s["max_tokens"],
                                                           top_p=s["top_p"], seed=s.get("seed")))


async def close_shared() -> None:
    """Close the shared clients (after a batch, in the loop that used them)."""
    for backend in _SHARED.values():
        await backend.close()
    _SHARED.clear()
