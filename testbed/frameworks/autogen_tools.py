"""AutoGen AgentChat 0.7 on a τ² task: the assistant and the simulated user as two `AssistantAgent`s with tools.

Built the way AgentChat's documentation gives an agent tools: each domain tool is an AgentChat tool
(`DomainTool`, a `BaseTool` whose schema is τ²'s as given, so the model sees τ²'s names,
descriptions and parameters), handed to `AssistantAgent(..., tools=[...])` with
`max_tool_iterations` and `reflect_on_tool_use=True` (the docs' recipe for an agent that loops over
tool calls until it speaks: the loop bound is τ²'s step limit, so the limit and not the loop ends a
long run of calls, and a turn never ends on a tool-call summary). The simulated user is an
`AssistantAgent` with the user's prompt (in telecom with the user's tools, requestor `user`); both
are a `RoundRobinGroupChat`, user first, whose agents' model contexts start from the episode's
opening with each side's own turns as its `assistant` messages (`UnboundedChatCompletionContext`
with `initial_messages`), and the team is run with no task.

What happened is recorded from the team's streamed events, in order: a `ToolCallRequestEvent` is the
caller's tool-call message (with the model's text beside the calls, which AgentChat streams as a
`ThoughtEvent`, and its usage), a `ToolCallExecutionEvent` the batch of results, a `TextMessage` a
spoken turn. Every call a tool runs goes through `episode.call_tool` inside the tool's `run_json`,
after the stream has recorded the message that made it, with the arguments as the model wrote
them (τ²'s own error for bad arguments). Calls AgentChat answers itself, never reaching a tool (a
name no tool has, arguments that are not JSON), are recorded with AgentChat's answer, which is what
the model saw, spoken by `autogen`, and count as tool errors.

A model's reply whose tool-call arguments are out of bounds (longer than testbed.limits allows, or nested
deeper) is refused by the testbed's client before AgentChat parses it (`BoundedToolCalls`): AgentChat's
own parse raises RecursionError on arguments nested a thousand deep, which leaves its team waiting
for ever, so the episode is an error naming the bound instead. When the episode is cancelled (Ctrl-C,
SIGTERM) the team's cancellation token is cancelled and the team stopped within seconds
(testbed.frameworks.prompt_stop): AgentChat otherwise plays on to the team's own end first.

The team stops its own way, on a `FunctionalTermination` asked after every agent's turn: it waits
until the stream has recorded that turn, then ends the team when the episode has stopped (a stop
signal or a limit). A limit reached inside the assistant's tool loop ends the episode there, but
AgentChat only asks its termination between turns, so the assistant finishes its turn: the call it
was making is sent (and shows in the wire log), any tools it then calls are refused without touching
the environment, and nothing more is recorded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import FunctionalTermination
from autogen_agentchat.messages import (BaseAgentEvent, BaseChatMessage, TextMessage, ThoughtEvent, ToolCallExecutionEvent,
                                        ToolCallRequestEvent)
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import AssistantMessage, CreateResult, UserMessage
from autogen_core.tools import BaseTool, ToolSchema
from autogen_ext.models.openai import OpenAIChatCompletionClient
from pydantic import BaseModel, ConfigDict

from testbed.backends.base import BackendError
from testbed.frameworks.autogen_chat import ASSISTANT, USER, AutoGenDialogues, model_client
from testbed.frameworks.pair import Side, generated
from testbed.frameworks.prompt_stop import stopping_promptly
from testbed.frameworks.run_log import framework_failure
from testbed.frameworks.tool_episode import ToolEpisode
from testbed.loop.orchestrator import TerminationReason
from testbed.tool_arguments import arguments_problem
from testbed.transcript import Message, ToolCall, Usage, is_assistant

FRAMEWORK_SPEAKER = "autogen"
"""The speaker of a tool result AgentChat gave itself, for a call that never reached a tool."""
CATCH_UP_TIMEOUT_S = 60.0
"""How long a tool or the termination check waits for the stream to record what came before it (it takes
milliseconds; past this the team's own events were lost, and the run fails instead of hanging)."""


class EpisodeEnded(RuntimeError):
    """A tool asked to run after the episode stopped: the call is refused, the environment untouched."""


class PassedThrough(BaseModel):
    """The arguments of a domain tool, as AgentChat parsed them: any object (τ²'s tools check their own)."""

    model_config = ConfigDict(extra="allow")


@dataclass
class StreamRecorder:
    """The episode's record of the team's stream, and the place tools and the termination check wait for it.

    `take` is given every streamed event in order; a tool call's `ToolCall` (arguments as the model
    wrote them) is kept by id once its message is recorded, and each result a tool produced is kept
    by call id until its batch is recorded.
    """

    episode: ToolEpisode
    sides: dict[str, tuple[str, Side]]
    """Agent name -> (transcript role, side)."""
    calls: dict[str, ToolCall] = field(default_factory=dict)
    results: dict[str, Message] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    thoughts: dict[str, str] = field(default_factory=dict)
    since: float = field(default_factory=time.perf_counter)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def take(self, event: BaseAgentEvent | BaseChatMessage) -> None:
        """Record one streamed event (an agent's tool calls, a batch of results, a spoken turn); others are skipped."""
        now = time.perf_counter()
        latency_s, self.since = now - self.since, now
        if event.source in self.sides:
            role, side = self.sides[event.source]
            if isinstance(event, ThoughtEvent):
                self.thoughts[event.source] = event.content
            elif isinstance(event, ToolCallRequestEvent):
                calls = tuple(ToolCall(c.id, c.name, c.arguments) for c in event.content)
                message = generated(self.episode.transcript, role, side, self.thoughts.pop(event.source, ""),
                                    _usage(event, latency_s))
                self.episode.record(replace(message, tool_calls=calls))
                self.calls.update((c.id, c) for c in calls)
            elif isinstance(event, ToolCallExecutionEvent):
                self._record_results(event, role)
            elif isinstance(event, TextMessage):
                self.thoughts.pop(event.source, None)
                self.episode.record(generated(self.episode.transcript, role, side, event.content, _usage(event, latency_s)))
        async with self._changed:
            self.seen.add(event.id)
            self._changed.notify_all()

    def _record_results(self, event: ToolCallExecutionEvent, requestor: str) -> None:
        if self.episode.stopped is not None:
            return
        batch = []
        for r in event.content:
            result = self.results.pop(r.call_id, None)
            if result is None:
                result = self.episode.reject(r.call_id, r.name, r.content, requestor, FRAMEWORK_SPEAKER)
            batch.append(result)
        self.episode.record_results(batch)

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        """Until the stream has recorded enough for `ready` (RuntimeError past CATCH_UP_TIMEOUT_S)."""
        async def waited() -> None:
            async with self._changed:
                await self._changed.wait_for(ready)

        try:
            await asyncio.wait_for(waited(), CATCH_UP_TIMEOUT_S)
        except TimeoutError:
            raise RuntimeError(f"the team's stream did not deliver its own events within {CATCH_UP_TIMEOUT_S:.0f} s") from None

    async def call_tool(self, call_id: str | None, requestor: str) -> str:
        """Run a recorded call against the episode's environment; the result's text, the result kept for its batch."""
        await self.wait_for(lambda: call_id in self.calls or self.episode.stopped is not None)
        if self.episode.stopped is not None:
            raise EpisodeEnded(f"the episode has ended ({self.episode.stopped}); the call was not made")
        result = self.episode.call_tool(self.calls[call_id], requestor)
        self.results[call_id] = result
        return result.content

    async def turn_ended_the_episode(self, delta: Sequence[BaseAgentEvent | BaseChatMessage]) -> bool:
        """The team's termination check after an agent's turn: once the stream has recorded the turn, whether the
        episode has stopped."""
        await self.wait_for(lambda: all(m.id in self.seen for m in delta))
        return self.episode.stopped is not None


def _usage(event: BaseAgentEvent | BaseChatMessage, latency_s: float) -> Usage:
    usage = event.models_usage
    return Usage(usage.prompt_tokens, usage.completion_tokens, latency_s) if usage else Usage(0, 0, latency_s)


class BoundedToolCalls(OpenAIChatCompletionClient):
    """The model client, refusing a reply whose tool calls' arguments are out of bounds (testbed.tool_arguments), and
    naming calls that came without an id.

    AgentChat parses a call's arguments itself before any tool sees them, and a parse that raises anything but a
    JSONDecodeError (a RecursionError on arguments nested a thousand deep) leaves its team waiting forever for
    the tool results. The refusal is kept in `refused`, which the episode's error then gives as its reason.
    """

    refused: list[str]

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        """The completion, unless a tool call in it is out of bounds (then ToolArgumentsRefused, its reason kept); a call the
        server sent without an id gets one (`call_<i>`, as the testbed's own backend names it), which AgentChat's tool
        results require."""
        result = await super().create(*args, **kwargs)
        if isinstance(result.content, list):
            for i, call in enumerate(result.content):
                if not call.id:
                    call.id = f"call_{i}"
                if (problem := arguments_problem(call.arguments)) is not None:
                    reason = f"the model called {call.name[:100]} with arguments that {problem}"
                    self.refused.append(reason)
                    raise ToolArgumentsRefused(reason)
        return result


class ToolArgumentsRefused(RuntimeError):
    """A model's tool call whose arguments are out of bounds, refused before AgentChat parses them."""


class DomainTool(BaseTool[PassedThrough, str]):
    """One τ² tool as an AgentChat tool: τ²'s schema as given, each call run against the episode's environment."""

    def __init__(self, schema: Mapping[str, Any], recorder: StreamRecorder, requestor: str):
        function = schema["function"]
        super().__init__(PassedThrough, str, function["name"], function.get("description", ""))
        self._schema = ToolSchema(name=function["name"], description=function.get("description", ""),
                                  parameters=function.get("parameters", {"type": "object", "properties": {}}))
        self._recorder, self._requestor = recorder, requestor

    @property
    def schema(self) -> ToolSchema:
        """τ²'s schema of the tool, not one derived from an arguments model."""
        return self._schema

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None) -> str:
        """Run the call with id `call_id` through the episode, with its arguments as the model wrote them (AgentChat
        gives the parsed `args`, which τ²'s tool checks itself)."""
        return await self._recorder.call_tool(call_id, self._requestor)

    async def run(self, args: PassedThrough, cancellation_token: CancellationToken) -> str:
        """Not used: a call runs by its id (`run_json`), which ties its result to the recorded call."""
        raise NotImplementedError("a domain tool runs by its call id (run_json), never without one")


def initial_context(opening: Sequence[Message], own_role: str) -> UnboundedChatCompletionContext:
    """An agent's model context holding the opening: its own side's turns as its messages, the other side's as user messages."""
    speaker = {"assistant": ASSISTANT, "user": USER}
    return UnboundedChatCompletionContext(initial_messages=[
        AssistantMessage(content=m.content, source=speaker[m.role]) if m.role == own_role
        else UserMessage(content=m.content, source=speaker[m.role]) for m in opening])


async def run_task(episode: ToolEpisode) -> TerminationReason:
    """Run the task as an AgentChat team until the episode stops; the stop, or BackendError when the team ended without one."""
    last = episode.transcript.messages[-1]
    if not last.spoken:
        raise BackendError("autogen: a τ² task's opening must end with a spoken turn (its history ends in tool traffic)")
    pair, opening = episode.pair(), episode.opening()
    recorder = StreamRecorder(episode, {ASSISTANT: ("assistant", pair.assistant), USER: ("user", pair.user)})
    clients, agents, refused = [], {}, []
    for name, role, side in ((ASSISTANT, "assistant", pair.assistant), (USER, "user", pair.user)):
        tools = [DomainTool(t, recorder, role) for t in episode.tools(role)]
        clients.append((model_client(side, bool(tools), BoundedToolCalls), side))
        clients[-1][0].refused = refused
        agents[role] = AssistantAgent(name, clients[-1][0], tools=tools or None, system_message=side.system_prompt,
                                      model_context=initial_context(opening, role), reflect_on_tool_use=True,
                                      max_tool_iterations=episode.max_steps)
    order = [agents["user"], agents["assistant"]] if is_assistant(last) else [agents["assistant"], agents["user"]]
    team = RoundRobinGroupChat(order, termination_condition=FunctionalTermination(recorder.turn_ended_the_episode))
    token = CancellationToken()

    async def play() -> None:
        async for event in team.run_stream(cancellation_token=token):
            if not isinstance(event, TaskResult):
                await recorder.take(event)

    try:
        await stopping_promptly(play(), token.cancel)
    except BackendError:
        raise
    except Exception as exc:
        if refused:
            framework_failure("autogen", exc)
            raise BackendError(f"autogen: {refused[0]}") from None
        raise framework_failure("autogen", exc) from exc
    finally:
        for client, side in clients:
            if side.endpoint.http_clients is None:
                await client.close()
    if episode.stopped is None:
        raise BackendError(f"autogen: the team stopped after {episode.transcript.messages[-1].role} without a τ² stop")
    return episode.stopped


class AutoGenFramework(AutoGenDialogues):
    """AutoGen AgentChat: dialogues as testbed.frameworks.autogen_chat runs them, and τ² tasks with the domain's tools (`run_task`)."""

    async def run_task(self, episode) -> TerminationReason:
        """Run a τ² task with the domain's tools given the framework's way (this module's `run_task`)."""
        return await run_task(episode)
