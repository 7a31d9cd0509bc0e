"""CAMEL (camel-ai) runs a τ² task: the assistant and the simulated user as two `ChatAgent`s with the domain's tools.

Tools. Each side's τ² tool schemas (`episode.tools`) become CAMEL `FunctionTool`s, given to the agent the way
CAMEL's docs give tools (`ChatAgent(system_message=..., model=..., tools=[FunctionTool(...)])`): each keeps τ²'s
schema as its `openai_tool_schema`, which CAMEL sends as given, and its function runs the call through
`episode.call_tool` against the episode's environment (requestor `assistant`, or `user` for the telecom user's
phone). The arguments pass through as the model wrote them, so bad arguments get τ²'s own tool error. A call
CAMEL answers itself without calling the function (a tool name it does not know) is a tool error result with
CAMEL's text, spoken by `camel`, and counts towards τ²'s error limit as τ² would count it. (τ²'s evaluator
replays every call and expects the stored result back, which CAMEL's text is not: while the converter to τ²'s
messages keeps such calls, an episode with one is stored as an error with the evaluator's reason.) CAMEL parses a
reply's arguments before any tool runs and raises on arguments that are not a JSON object (JSONDecodeError, or
pydantic's ValidationError for other JSON), so such a reply makes the episode an error with CAMEL's reason
(native answers it with τ²'s error and goes on). CAMEL checks every tool's schema against JSON Schema's
meta-schema at every model request (warning, in the run's log, of τ² parameters without a description): client
CPU that CAMEL's figures include (about 90 ms per airline request, 14 tools, on a loaded 2-core machine).

The loop. The opening (τ²'s greeting, or the task's message history) is written into both memories: each side's
own turns as its answers, the other side's as its input, its own tool traffic in CAMEL's tool-call and
function-result forms (the other side's it never sees). Then the two agents alternate `astep` calls as
camel_roleplay's dialogue loop does, the user first, each answering the other's last text turn, until a stop.

Recording. One CAMEL step runs the tool loop inside it: a request, the tools, a request again, until the model
answers with text. When the step returns, what happened in it is recorded in order: each tool-call message as
CAMEL's memory holds it (`chat_history`: its calls with their ids and the arguments as CAMEL sends them back),
the batch of its results from the response's `ToolCallingRecord`s (`info["tool_calls"]`, the results the model
was sent) with `episode.record_results`, then the text turn with `episode.record`. Usage is per model request
(CAMEL's `on_request_usage` callback); a request's latency is the time from the step's start or the last tool
result to its end. The finish reason CAMEL reports (`termination_reasons`, the step's last request's) goes on
the message that request made; CAMEL reports none for the step's earlier requests.

Limits. τ²'s step limit holds inside a CAMEL step through CAMEL's `max_iteration` option: before each step it is
the number of model requests left before the limit (a tool-call message and its batch of results are two
steps), so CAMEL's loop ends with the batch of results that reaches the limit and requests nothing more.
When a result brings τ²'s tool-error count to the limit, the tool sets `max_iteration` to 0, so CAMEL ends
its loop after that batch. CAMEL's own answers are counted when the step ends: should they bring the count to
the limit, CAMEL may have made further requests in that step, which the wire log holds and the transcript
does not (the episode records nothing after its stop).

Models and requests are camel_roleplay's: an OpenAI-compatible CAMEL model on each Side's endpoint (the wire
recorder's shared httpx clients and headers when the run keeps a wire log), the sampling as its
`model_config_dict` with the Side's seed at every request, CAMEL's rate-limit retry off, summarisation off.
With tools, CAMEL sends no `tool_choice` (the server's default applies; native sends "auto") and a tool-call
message's empty text as "" rather than null.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from testbed.backends.base import BackendError
from testbed.frameworks.camel_roleplay import UNKNOWN_MODEL_WINDOW, CamelDialogues, camel_model, with_clients
from testbed.frameworks.pair import Side, generated
from testbed.loop.orchestrator import TerminationReason
from testbed.transcript import ASSISTANT, Message, ToolCall, Usage, is_assistant, is_system

# camel after camel_roleplay, which makes it importable under mcp 2 and turns its logging off
from camel.agents import ChatAgent
from camel.messages import BaseMessage, FunctionCallingMessage
from camel.toolkits import FunctionTool
from camel.types import OpenAIBackendRole, RoleType

CAMEL_SPEAKER = "camel"
"""The speaker of a tool result CAMEL wrote itself, for a call that never reached the environment."""
RUNNING_CALL_ID = "camel-running"
"""The id a call runs under: CAMEL gives a tool function only the arguments; the result is tied to the call's id when recorded."""


@dataclass(frozen=True)
class Executed:
    """A call that reached the environment during a CAMEL step: its tool, its arguments, τ²'s result."""

    name: str
    arguments: dict[str, Any]
    result: Message


@dataclass
class StepLog:
    """What one CAMEL step does not say in its response: each model request's usage, and which calls ran."""

    mark: float
    """When the step started or the last tool result came back: a request's latency runs from here."""
    requests: list[Usage] = field(default_factory=list)
    executed: list[Executed] = field(default_factory=list)


def remember(agent: ChatAgent, role: str, messages: list[Message]) -> None:
    """Write earlier messages into one agent's memory as CAMEL would have written them: the side's own turns as its
    answers, the other side's as input, its own tool calls and results in CAMEL's forms; the rest it never saw."""
    for m in messages:
        if m.spoken and m.role == role:
            agent.record_message(BaseMessage.make_assistant_message(m.speaker, m.content))
        elif m.spoken:
            agent.update_memory(BaseMessage.make_user_message(m.speaker, m.content), OpenAIBackendRole.USER)
        elif m.tool_calls and m.role == role:
            calls = BaseMessage(role_name=agent.role_name, role_type=agent.role_type, content=m.content,
                                meta_dict={"tool_calls": [c.as_chat() for c in m.tool_calls]})
            agent.update_memory(calls, OpenAIBackendRole.ASSISTANT)
        elif m.tool_result is not None and m.tool_result.requestor == role:
            result = FunctionCallingMessage(role_name=agent.role_name, role_type=agent.role_type, meta_dict=None, content="",
                                            func_name=m.tool_result.name, result=m.content, tool_call_id=m.tool_result.call_id)
            agent.update_memory(result, OpenAIBackendRole.FUNCTION)


def naming_calls(model):
    """The CAMEL model with an id on every tool call of its replies, `call_<i>` where the server sent none (as the
    testbed's own backend names them): CAMEL's ToolCallRequest refuses a call without one, which ended the episode."""
    run = model.arun

    async def arun(*args: Any, **kwargs: Any):
        completion = await run(*args, **kwargs)
        for choice in getattr(completion, "choices", None) or ():
            for i, call in enumerate(choice.message.tool_calls or ()):
                if not call.id:
                    call.id = f"call_{i}"
        return completion

    model.arun = arun
    return model


class ToolAgent:
    """One side of the task (`assistant` or `user`) as a CAMEL ChatAgent with its domain tools; `answer` runs one
    CAMEL step and records what happened in it (see the module docstring)."""

    def __init__(self, episode, role: str, side: Side, clients: list):
        self.episode, self.role, self.side = episode, role, side
        schemas = episode.tools(role)
        tools = [FunctionTool(self._tool(s["function"]["name"]), openai_tool_schema=s) for s in schemas]
        role_type = RoleType.ASSISTANT if role == ASSISTANT else RoleType.USER
        self.agent = ChatAgent(system_message=BaseMessage(side.name, role_type, None, side.system_prompt),
                               model=naming_calls(camel_model(side, clients)), tools=tools, token_limit=UNKNOWN_MODEL_WINDOW,
                               summarize_threshold=None, retry_attempts=1, on_request_usage=self._request_done)
        self.log = StepLog(time.perf_counter())

    def _tool(self, name: str):
        async def run(**arguments: Any) -> str:
            episode = self.episode
            result = episode.call_tool(ToolCall(RUNNING_CALL_ID, name, json.dumps(arguments)), self.role)
            self.log.executed.append(Executed(name, arguments, result))
            self.log.mark = time.perf_counter()
            if episode.desk.errors >= episode.max_errors:
                self.agent.max_iteration = 0
            return result.content

        run.__name__ = name
        run.__doc__ = f"τ²'s {name}, run against the episode's environment."
        return run

    def _request_done(self, payload: dict[str, Any]) -> None:
        now = time.perf_counter()
        usage = payload.get("request_usage") or {}
        self.log.requests.append(Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, now - self.log.mark))
        self.log.mark = now

    async def answer(self, message: BaseMessage) -> tuple[TerminationReason | None, str]:
        """One CAMEL step on the other side's turn, recorded: the stop when the episode ended in it, else the text turn."""
        episode = self.episode
        self.agent.max_iteration = (episode.max_steps - episode.steps + 1) // 2
        self.log = StepLog(time.perf_counter())
        before = len(self.agent.chat_history)
        response = await self.agent.astep(message)
        made = [m for m in self.agent.chat_history[before:] if is_assistant(m) and m.get("tool_calls")]
        return self._record(response, made)

    def _record(self, response, made: list[dict[str, Any]]) -> tuple[TerminationReason | None, str]:
        episode, requests = self.episode, self.log.requests
        records = list(response.info.get("tool_calls") or ())
        reasons = response.info.get("termination_reasons") or [None]
        executed = list(self.log.executed)
        for i, chat in enumerate(made):
            calls = tuple(ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in chat["tool_calls"])
            last = i == len(requests) - 1
            message = generated(episode.transcript, self.role, self.side, chat.get("content") or "", requests[i],
                                reasons[0] if last else None)
            if stop := episode.record(replace(message, tool_calls=calls)):
                return stop, ""
            results = [self._result(call, records.pop(0), executed) for call in calls]
            if stop := episode.record_results(results):
                return stop, ""
        if len(requests) == len(made):
            raise BackendError(f"camel: the {self.role} agent's step ended inside its tool loop before any stop")
        if response.msg is None:
            raise BackendError(f"camel: the {self.role} agent gave no message ({', '.join(map(str, reasons))})")
        text = response.msg.content
        turn = generated(episode.transcript, self.role, self.side, text, requests[-1], reasons[0])
        return episode.record(turn), text

    def _result(self, call: ToolCall, record, executed: list[Executed]) -> Message:
        """The result the model was sent for `call`: τ²'s when the call reached the environment, else CAMEL's own error."""
        if record.tool_call_id != call.id:
            raise BackendError(f"camel: the tool results are out of order ({record.tool_call_id} answers call {call.id})")
        content = record.result if isinstance(record.result, str) else str(record.result)
        if executed and executed[0].name == record.tool_name and executed[0].arguments == record.args:
            ran = executed.pop(0).result
            return replace(ran, content=content, tool_result=replace(ran.tool_result, call_id=call.id))
        return self.episode.reject(call.id, record.tool_name, content, self.role, CAMEL_SPEAKER)


async def run_task(episode) -> TerminationReason:
    """Run one τ² task with CAMEL (see the module docstring); a framework exception is the episode's BackendError."""
    return await with_clients(lambda clients: _run(episode, clients))


async def _run(episode, clients: list) -> TerminationReason:
    pair = episode.pair()
    assistant = ToolAgent(episode, "assistant", pair.assistant, clients)
    user = ToolAgent(episode, "user", pair.user, clients)
    history = [m for m in episode.transcript.messages if not is_system(m)]
    *earlier, last = history
    if not (last.spoken and is_assistant(last)):
        raise BackendError("camel: a τ² task starts after the assistant's turn; this one's opening ends otherwise")
    remember(assistant.agent, "assistant", history)
    remember(user.agent, "user", earlier)
    speaker, text = last.speaker, last.content
    while True:
        stop, text = await user.answer(BaseMessage.make_user_message(speaker, text))
        if stop is not None:
            return stop
        stop, text = await assistant.answer(BaseMessage.make_user_message(pair.user.name, text))
        if stop is not None:
            return stop
        speaker = pair.assistant.name


class CamelFramework(CamelDialogues):
    """CAMEL: dialogues as testbed.frameworks.camel_roleplay runs them, and τ² tasks with the domain's tools (`run_task`)."""

    async def run_task(self, episode) -> TerminationReason:
        """Run a τ² task with the domain's tools given the framework's way (this module's `run_task`)."""
        return await run_task(episode)
