"""Agents for the bring-your-own-agent tests (`callable: byo_agents:NAME`): one that remembers, and misbehaving ones."""

from __future__ import annotations

import asyncio

from testbed.backends.agent_protocol import AgentMessage, AgentTurn
from testbed.transcript import ToolCall

BUILT: list["CountingAgent"] = []
"""Every CountingAgent built, in order: one per episode."""


class CountingAgent:
    """Says which of its own turns this is, so a test sees its state is per episode; calls a tool when given tools."""

    def __init__(self, greeting: str = "turn"):
        self.greeting, self.turns, self.episodes = greeting, 0, set()
        BUILT.append(self)

    async def respond(self, turn: AgentTurn) -> AgentMessage | str:
        self.turns += 1
        self.episodes.add(turn.episode_id)
        if turn.tools and turn.messages[-1]["role"] == "user" and self.turns == 1:
            name = turn.tools[0]["function"]["name"]
            return AgentMessage(tool_calls=(ToolCall("c1", name, "{}"),))
        return f"{self.greeting} {self.turns} of {len(turn.messages)} messages"


async def echo_agent(turn: AgentTurn) -> dict:
    """A function agent answering in the HTTP contract's short form."""
    return {"content": f"you said: {turn.messages[-1]['content'][:20]}"}


async def raising_agent(turn: AgentTurn) -> str:
    raise RuntimeError("the retrieval index is missing")


async def junk_agent(turn: AgentTurn) -> object:
    return 42


async def hanging_agent(turn: AgentTurn) -> str:
    await asyncio.sleep(3600)
    return "never"


class Misbehaving:
    """Raises, returns junk or hangs, as its `how` option says: the same misbehaviours as a class."""

    def __init__(self, how: str):
        self.how = how

    async def respond(self, turn: AgentTurn):
        return await {"raises": raising_agent, "junk": junk_agent, "hangs": hanging_agent}[self.how](turn)


def not_async(turn):
    return "sync"
