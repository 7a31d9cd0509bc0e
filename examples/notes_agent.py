"""An agent of your own: an OpenAI-compatible model with a retrieval step and a scratchpad (testbed.backends.agent_protocol).

Each turn it looks up the note that shares the most words with the user's last message, keeps a
scratchpad of what the user has said in this episode, and puts both in front of the model as a
system message; so the model behind it sees more than a bare model would. One instance per episode
(the testbed builds it with the agent spec's `options`), so the scratchpad is this episode's own.
On τ² tasks it passes the tool schemas on and returns the model's tool calls for the environment.
"""

from __future__ import annotations

import os
import re

from openai import AsyncOpenAI

from testbed.backends.agent_protocol import AgentMessage, AgentTurn
from testbed.transcript import ToolCall, Usage

NOTES = [
    "Refunds: an order can be refunded within 30 days; ask for the order number first.",
    "Arithmetic: show each step on its own line and give the final number last.",
    "Travel: ask for dates, budget and the city before suggesting anything.",
]
"""The agent's knowledge base: tiny, in the file, so the example needs nothing else."""


def words(text: str) -> set[str]:
    """The lower-case words of a text, for the overlap that ranks notes."""
    return set(re.findall(r"[a-z]+", text.lower()))


class NotesAgent:
    """Retrieves one note, remembers what the user said, then asks the model."""

    def __init__(self, model: str, base_url: str, api_key_env: str | None = None):
        self.model = model
        self.client = AsyncOpenAI(base_url=base_url, api_key=os.environ.get(api_key_env or "", "") or "none", max_retries=0)
        self.scratchpad: list[str] = []

    async def respond(self, turn: AgentTurn) -> AgentMessage:
        """The model's answer, with the best note and this episode's scratchpad in front of the conversation."""
        last = next((m.get("content") or "" for m in reversed(turn.messages) if m["role"] == "user"), "")
        self.scratchpad.append(last[:120])
        note = max(NOTES, key=lambda n: len(words(n) & words(last)))
        memo = f"Relevant note: {note}\nScratchpad (the user so far): " + " | ".join(self.scratchpad)
        messages = [{"role": "system", "content": memo}, *turn.messages]
        extra = {"tools": turn.tools, "tool_choice": "auto"} if turn.tools else {}
        reply = await self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=turn.sampling["temperature"], max_tokens=turn.sampling["max_tokens"], **extra)
        message = reply.choices[0].message
        calls = tuple(ToolCall(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ())
        usage = Usage(reply.usage.prompt_tokens, reply.usage.completion_tokens) if reply.usage else Usage()
        return AgentMessage(message.content or "", calls, usage)
