"""LangGraph: a τ² task as a state graph in which each side's model calls its tools through a `ToolNode`.

The graph is the one LangGraph's docs give an agent tools ("add tools" in the chat bot tutorial):
a model node with `ChatOpenAI(...).bind_tools(tools)`, a prebuilt `ToolNode` holding the same tools,
and a conditional edge asking `tools_condition` whether the model's last message calls a tool. The
prebuilt ReAct agent (`create_react_agent`) is not used: it is a whole graph that ends when the model
stops calling tools, while a τ² episode needs the simulated user as a node of the same graph, the
episode's stops on every edge, and each side's tools (in telecom the user's phone too) beside its
own model. So the graph has two such model ⇄ tools loops:

    START -> user | assistant (whoever speaks next after the opening)
    assistant -> tools -> tool_results -> assistant       (tools_condition)
    assistant -> user                                     (a text turn)
    user -> user_tools -> user_tool_results -> user        (telecom: its phone)
    user -> assistant                                     (a text turn)

and every edge out of a model node or a results node goes to END once `episode.stopped` is set (a
τ² stop signal, the step limit or the tool-error limit, all decided by the episode as it records).

The state holds each side's own view as its own message list: `messages` for the assistant (true
roles: the user's turns as `HumanMessage`, its own tool calls and results), `user_messages` for the
simulated user (role-flipped, as langgraph_graph's `swap_roles` does for dialogues: the assistant's
turns as `HumanMessage`, its own turns and tool calls as `AIMessage`, its own tool results). Each
side's `ToolNode` reads and writes its own list (`messages_key`), so neither sees the other's tool
traffic, as in τ². The opening (τ²'s greeting, or a task's message history with its tool calls)
is the starting state, converted the same way.

Each domain tool is a `StructuredTool` whose `args_schema` is τ²'s JSON schema, so the model is sent
τ²'s names, descriptions and parameters; LangChain validates nothing against a JSON schema, so the
arguments reach `episode.call_tool` as the model wrote them and τ²'s own error comes back for bad
ones (raised as a `ToolException`, which LangChain turns into an error `ToolMessage` with τ²'s text).
A call the framework rejects before any tool runs becomes a tool error result with the framework's
own words: an unknown tool (ToolNode's "is not a valid tool" message) or arguments that are not JSON
(LangChain's `invalid_tool_calls`, which it sends back to the server as calls, so they are answered).
These count toward the tool-error limit as τ² counts every error result. Arguments that are JSON but
not an object (`[1]`, `3`) are neither: ChatOpenAI fails to build its reply message from them (a
pydantic ValidationError, langchain-ai/langchain#35990), so the episode is an error with that reason.

The transcript is written from the graph's messages as the nodes produce them: a model node records
its reply (text turn or tool calls, with usage and latency) with `episode.record`, a results node the
batch of tool messages answering the last call with `episode.record_results`.

What LangGraph does differently from the native loop: LangChain sends τ²'s schemas without their
`title` keywords and with `$defs` references inlined; a recorded call's arguments are LangChain's
re-serialisation of the parsed JSON (what it sends back to the server; the wire log has the model's
own text); a rejected call is answered in the framework's words where the native loop gives τ²'s;
ChatOpenAI sends no `tool_choice` (the server's default, `auto` when tools are given),
`max_completion_tokens` for `max_tokens`, and one fixed seed per client and episode.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, ToolRuntime, tools_condition

from testbed.backends.base import BackendError
from testbed.frameworks.langgraph_graph import LangGraphDialogues, client, usage_of
from testbed.frameworks.pair import Side, generated
from testbed.frameworks.run_log import framework_failure
from testbed.loop.orchestrator import TerminationReason
from testbed.frameworks.tool_desk import ENVIRONMENT, next_side
from testbed.transcript import ASSISTANT, Message, ToolCall, ToolResult

FRAMEWORK_SPEAKER = "langgraph"
"""The speaker of a result LangGraph gave itself, never the environment's."""
VIEW_KEY = {"assistant": "messages", "user": "user_messages"}
"""The state key holding each side's own view of the conversation."""
TOOLS_NODE = {"assistant": "tools", "user": "user_tools"}
"""Each side's ToolNode."""
RESULTS_NODE = {"assistant": "tool_results", "user": "user_tool_results"}
"""The node after each side's ToolNode that answers rejected calls and records the batch."""


class TaskState(MessagesState):
    """The graph's state: the assistant's view in `messages`, the simulated user's role-flipped view in `user_messages`."""

    user_messages: Annotated[list[AnyMessage], add_messages]


async def run_task(episode) -> TerminationReason:
    """Run the episode's graph from its opening until an edge ends it on the episode's stop; return that stop.

    A graph that ends without a stop is a BackendError saying so; any exception of the framework is one
    too (testbed.frameworks.run_log.framework_failure), with the transcript kept as far as it got.
    """
    graph = build_task_graph(episode)
    try:
        config = {"recursion_limit": recursion_limit(episode.max_steps)}
        await graph.ainvoke(initial_state(episode.transcript.messages), config=config)
    except BackendError:
        raise
    except Exception as exc:
        raise framework_failure("langgraph", exc) from exc
    if episode.stopped is None:
        raise BackendError("langgraph: the graph ended without a stop (no stop signal, step or error limit was reached)")
    return episode.stopped


def recursion_limit(max_steps: int) -> int:
    """Supersteps enough for `max_steps` τ² steps: a generation is one node, a batch of results two (ToolNode, then
    the results node), and the tool-call message before the limit's check may add one step more."""
    return 2 * (max_steps + 1) + 2


def build_task_graph(episode):
    """The compiled graph of one episode; its nodes and edges close over the episode, which records and decides the stops."""
    pair = episode.pair()
    sides = {"assistant": pair.assistant, "user": pair.user}
    builder = StateGraph(TaskState)
    for role, side in sides.items():
        tools = [domain_tool(episode, schema["function"], role) for schema in episode.tools(role)]
        model = client(side).bind_tools(tools) if tools else client(side)
        other = "user" if role == ASSISTANT else "assistant"
        builder.add_node(role, model_node(episode, model, side, role))
        builder.add_node(TOOLS_NODE[role], ToolNode(tools, messages_key=VIEW_KEY[role]))
        builder.add_node(RESULTS_NODE[role], results_node(episode, role, {t.name for t in tools}))
        builder.add_conditional_edges(role, after_model(episode, role, other),
                                      [TOOLS_NODE[role], RESULTS_NODE[role], other, END])
        builder.add_edge(TOOLS_NODE[role], RESULTS_NODE[role])
        builder.add_conditional_edges(RESULTS_NODE[role], after_results(episode, role), [role, END])
    builder.add_conditional_edges(START, lambda state: first_node(episode.transcript.messages[-1]),
                                  ["assistant", "user", TOOLS_NODE["assistant"], TOOLS_NODE["user"]])
    return builder.compile()


def first_node(last: Message) -> str:
    """Where the graph starts after the opening: whoever speaks next, or the caller's ToolNode after a call left unanswered."""
    side = next_side(last)
    return TOOLS_NODE[last.role] if side == "environment" else side


def domain_tool(episode, function: dict[str, Any], requestor: str) -> StructuredTool:
    """One τ² tool as a LangChain tool: τ²'s name, description and JSON schema; a call runs in the episode's
    environment for `requestor` and answers with τ²'s result, or raises τ²'s error as a ToolException.
    The call's id comes from the `ToolRuntime` that ToolNode injects into a tool with a `runtime` parameter."""
    name = function["name"]

    async def call(runtime: ToolRuntime, **arguments: Any) -> str:
        result = episode.call_tool(ToolCall(runtime.tool_call_id, name, json.dumps(arguments, ensure_ascii=False)), requestor)
        if result.tool_result is not None and result.tool_result.error:
            raise ToolException(result.content)
        return result.content

    return StructuredTool(name=name, description=function.get("description") or "", coroutine=call, handle_tool_error=True,
                          args_schema=function.get("parameters") or {"type": "object", "properties": {}})


def model_node(episode, model, side: Side, role: str):
    """The node of one side's model: it answers its own view (after its system prompt), records the reply, and
    shows a text turn to the other side (a tool call stays in its own view)."""
    system = [SystemMessage(content=side.system_prompt)] if side.system_prompt else []
    own, other = VIEW_KEY[role], VIEW_KEY["user" if role == ASSISTANT else "assistant"]

    async def generate(state: TaskState) -> dict:
        began = time.perf_counter()
        reply = with_call_ids(await model.ainvoke(system + state[own]))
        latency = time.perf_counter() - began
        message = generated(episode.transcript, role, side, str(reply.text), usage_of(reply, latency),
                            reply.response_metadata.get("finish_reason"))
        message = replace(message, tool_calls=calls_of(reply))
        episode.record(message)
        update: dict[str, list[BaseMessage]] = {own: [reply]}
        if not message.tool_calls:
            update[other] = [HumanMessage(content=reply.text)]
        return update

    return generate


def with_call_ids(reply: AIMessage) -> AIMessage:
    """The reply with an id on every call, `call_<i>` where the server sent none (as the testbed's own backend names them):
    LangChain keeps such a call's id None, and its ToolMessage refuses a result without one, which ended the episode."""
    for i, c in enumerate([*reply.tool_calls, *reply.invalid_tool_calls]):
        if not c.get("id"):
            c["id"] = f"call_{i}"
    return reply


def calls_of(reply: AIMessage) -> tuple[ToolCall, ...]:
    """A reply's tool calls as the graph holds them, in the order LangChain sends them back: parsed calls (arguments
    re-serialised), then the calls whose arguments were not JSON (their text as written)."""
    valid = [ToolCall(c["id"] or "", c["name"], json.dumps(c["args"], ensure_ascii=False)) for c in reply.tool_calls]
    invalid = [ToolCall(c["id"] or "", c["name"] or "", c["args"] or "") for c in reply.invalid_tool_calls]
    return (*valid, *invalid)


def after_model(episode, role: str, other: str):
    """The edge out of a model node: END on a stop, the ToolNode when `tools_condition` finds calls, the results node
    when every call was rejected as not JSON, else the other side."""
    key = VIEW_KEY[role]

    def route(state: TaskState) -> str:
        if episode.stopped is not None:
            return END
        if tools_condition(state, messages_key=key) == "tools":
            return TOOLS_NODE[role]
        return RESULTS_NODE[role] if state[key][-1].invalid_tool_calls else other

    return route


def after_results(episode, role: str):
    """The edge out of a results node: END on a stop (the step or error limit), else back to the caller's model."""

    def route(state: TaskState) -> str:
        return END if episode.stopped is not None else role

    return route


def results_node(episode, role: str, tool_names: set[str]):
    """The node after a side's ToolNode: it answers the calls LangChain rejected as not JSON with error results (added to
    the view, so every call the server is sent back has its answer), counts every rejection (those and ToolNode's
    answers to unknown tools) as a tool error, and records the batch of results answering the last call message."""
    key = VIEW_KEY[role]

    def record(state: TaskState) -> dict:
        view = state[key]
        at = max(i for i, m in enumerate(view) if isinstance(m, AIMessage))
        rejected = [ToolMessage(content=f"Error: {c['error']}", tool_call_id=c["id"] or "", name=c["name"] or "", status="error")
                    for c in view[at].invalid_tool_calls]
        batch = [rejection(episode, m, role) if m.status == "error" and m.name not in tool_names else tool_result(m, role)
                 for m in view[at + 1:]]
        episode.record_results(batch + [rejection(episode, m, role) for m in rejected])
        return {key: rejected}

    return record


def rejection(episode, message: ToolMessage, requestor: str) -> Message:
    """A call LangChain or ToolNode answered itself (not JSON, an unknown tool) as the episode's rejected call."""
    return episode.reject(message.tool_call_id, message.name or "", str(message.content), requestor, FRAMEWORK_SPEAKER)


def tool_result(message: ToolMessage, requestor: str) -> Message:
    """A ToolMessage of the graph as the transcript's tool message (its turn index is set when recorded)."""
    return Message("tool", str(message.content), ENVIRONMENT, 0,
                   tool_result=ToolResult(message.tool_call_id, message.name or "", requestor, message.status == "error"))


def initial_state(messages: list[Message]) -> dict[str, list[BaseMessage]]:
    """The graph's starting state from the transcript's opening: each side's view of it, system prompts left out
    (each model node puts its own first)."""
    views = {key: [in_view(m, side) for m in messages] for side, key in VIEW_KEY.items()}
    return {key: [m for m in view if m is not None] for key, view in views.items()}


def in_view(m: Message, side: str) -> BaseMessage | None:
    """One transcript message as `side` sees it: a spoken turn (its own as AIMessage, the other's as HumanMessage), its
    own tool calls and results; None for system prompts and the other side's tool traffic."""
    if m.spoken:
        return AIMessage(content=m.content) if m.role == side else HumanMessage(content=m.content)
    if m.tool_calls and m.role == side:
        return as_calls(m)
    if m.tool_result is not None and m.tool_result.requestor == side:
        r = m.tool_result
        return ToolMessage(content=m.content, tool_call_id=r.call_id, name=r.name, status="error" if r.error else "success")
    return None


def as_calls(m: Message) -> AIMessage:
    """A recorded tool-call message as LangChain holds it: arguments that parse as a JSON object as a call, others (not
    an object, or out of bounds: testbed.tool_arguments, checked before parsing) as an invalid call."""
    valid, invalid = [], []
    for c in m.tool_calls:
        args, problem = c.checked_arguments()
        if args is not None and c.arguments.strip():
            valid.append({"id": c.id, "name": c.name, "args": args, "type": "tool_call"})
        else:
            why = f"the arguments {problem or 'are not a JSON object'}"
            invalid.append({"id": c.id, "name": c.name, "args": c.arguments, "error": why, "type": "invalid_tool_call"})
    return AIMessage(content=m.content, tool_calls=valid, invalid_tool_calls=invalid)


class LangGraphFramework(LangGraphDialogues):
    """LangGraph: dialogues as testbed.frameworks.langgraph_graph runs them, and τ² tasks with the domain's tools (`run_task`)."""

    async def run_task(self, episode) -> TerminationReason:
        """Run a τ² task with the domain's tools given the framework's way (this module's `run_task`)."""
        return await run_task(episode)
