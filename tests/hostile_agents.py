"""Python agents that try to end the run (`callable: hostile_agents:NAME`): each raises something no agent should,
returns far too much text, or calls a tool with arguments nested a thousand deep."""

from __future__ import annotations

import asyncio

from testbed.backends.agent_protocol import AgentMessage, AgentTurn
from testbed.transcript import ToolCall

DEEP_ARGUMENTS = '{"a":' + "[" * 1000 + "]" * 1000 + "}"
"""Tool-call arguments nested 1,000 deep in 2 KB: Python's json parser recurses once a level and gives up."""


class AgentsOwnBaseException(BaseException):
    """A BaseException of the agent's own, which no `except Exception` catches."""


RAISED = {
    "cancelled": lambda: asyncio.CancelledError(),
    "exit": lambda: SystemExit(3),
    "interrupt": lambda: KeyboardInterrupt(),
    "generator_exit": lambda: GeneratorExit(),
    "own": lambda: AgentsOwnBaseException("the agent's own"),
}
"""What `Raising` raises, by its `what` option."""


class Raising:
    """Raises `RAISED[what]` from its first turn on, as its `what` option says."""

    def __init__(self, what: str):
        self.what = what

    async def respond(self, turn: AgentTurn) -> str:
        await asyncio.sleep(0)
        raise RAISED[self.what]()


class ExitsWhenBuilt:
    """Calls sys.exit(3) in its constructor (the episode's first turn builds it)."""

    def __init__(self):
        raise SystemExit(3)

    async def respond(self, turn: AgentTurn) -> str:
        return "never"


class Verbose:
    """Answers with `megabytes` MB of `char` (characters, which are bytes of UTF-8 when `char` is ASCII)."""

    def __init__(self, megabytes: float = 10, char: str = "x"):
        self.text = char * int(megabytes * 1024 * 1024)

    async def respond(self, turn: AgentTurn) -> str:
        return self.text


class DeepCaller:
    """Calls the first tool it is given with arguments nested 1,000 deep (as JSON text, or as a Python dict in the HTTP
    contract's short form when `as_dict`), then speaks; stops after its second spoken turn."""

    def __init__(self, as_dict: bool = False):
        self.as_dict, self.calls = as_dict, 0

    async def respond(self, turn: AgentTurn) -> AgentMessage | dict | str:
        if turn.tools and not self.calls:
            self.calls += 1
            name = turn.tools[0]["function"]["name"]
            if self.as_dict:
                nested: list = []
                for _ in range(1000):
                    nested = [nested]
                return {"content": None, "tool_calls": [{"name": name, "arguments": {"a": nested}}]}
            return AgentMessage(tool_calls=(ToolCall("deep_1", name, DEEP_ARGUMENTS),))
        return "Done. ###STOP###"


class SlowTalker:
    """Answers after `delay_s`, so a run lasts long enough to be interrupted."""

    def __init__(self, delay_s: float = 0.5):
        self.delay_s = delay_s

    async def respond(self, turn: AgentTurn) -> str:
        await asyncio.sleep(self.delay_s)
        return "Still thinking about it."


class UntypedCall:
    """Calls a tool with its arguments as a dict inside a ToolCall, where JSON text belongs."""

    async def respond(self, turn: AgentTurn) -> AgentMessage:
        return AgentMessage(tool_calls=(ToolCall("c1", "lookup", {"x": 1}),))  # type: ignore[arg-type]
