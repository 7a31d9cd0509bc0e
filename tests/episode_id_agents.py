"""Agents for the episode-id tests (`callable: episode_id_agents:NAME`): each logs the `episode_id` of every turn it is
asked, as an agent's own logs would, so a test can join that log to the store."""

from __future__ import annotations

import asyncio

from testbed.backends.agent_protocol import AgentTurn

SEEN: list[str] = []
"""The episode id of every turn any LoggingAgent answered, in order."""
HOLD_SECOND_TURN: asyncio.Event | None = None
"""When set to an event, a LoggingAgent's second turn of an episode waits for it: a test interrupts the run there."""


class LoggingAgent:
    """Logs its turn's episode id and says which of its own turns this is; its second turn may wait (HOLD_SECOND_TURN)."""

    def __init__(self) -> None:
        self.turns = 0

    async def respond(self, turn: AgentTurn) -> str:
        self.turns += 1
        SEEN.append(turn.episode_id)
        if self.turns == 2 and HOLD_SECOND_TURN is not None:
            await HOLD_SECOND_TURN.wait()
        return f"turn {self.turns}: noted. What else can you tell me?"
