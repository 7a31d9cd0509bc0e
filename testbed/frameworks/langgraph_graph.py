"""LangGraph: the pair as a two-node graph, built the way LangGraph's tutorial "Chat Bot Evaluation as
Multi-agent Simulation" builds a simulated user.

The pair (testbed.frameworks.pair) becomes a `StateGraph` over `MessagesState` with two nodes, each
with its own `ChatOpenAI` client on its side's server, model and sampling: "assistant" (the chat bot)
and "user" (the simulated user). Edges: START -> assistant; assistant -> user or END; user ->
assistant or END, the conditional edges applying the scenario's stops (the tutorial's
`should_continue`), each deciding with `Limits.first_stop`. The graph is run once per episode with
`ainvoke`, starting from the opening.

What LangGraph does differently from the native loop:

- History is the graph's state, a list of LangChain messages in which `HumanMessage` is the
  simulated user (the dataset's opening turn included) and `AIMessage` the assistant; each node
  returns its reply and the state's reducer appends it. The testbed transcript is written beside
  it, inside each node as its reply arrives, so a failure leaves the turns so far.
- The user node sees the state with the roles swapped (the tutorial's `_swap_roles`): the
  assistant's replies as "user" messages and its own turns, the opening question included, as
  "assistant" messages, after the persona as system message. The native user builds its own view.
- Replies stay in the state as written: the edge ends the graph on a user reply with the end marker,
  and the transcript stores each turn without the marker (a user turn that was only the marker not
  at all), but the simulated user reads the assistant's replies from the state, marker included.
- Each client has one fixed sampling seed per episode; the native user adds the turn index to its
  seed at every turn. LangChain sends `max_completion_tokens` where the native backend sends
  `max_tokens`, and control tokens are not neutralised in what either node sends.
"""

from __future__ import annotations

import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

from testbed.backends.base import BackendError
from testbed.frameworks.base import AfterAssistant
from testbed.frameworks.pair import Pair, Side, generated, opening, pair_of
from testbed.frameworks.run_log import framework_failure
from testbed.loop.orchestrator import Limits, TerminationReason, strip_marker
from testbed.loop.participants import Participant
from testbed.transcript import Message, Transcript, Usage, is_user


class LangGraphDialogues:
    """Runs the conversation as a compiled LangGraph `StateGraph` of an assistant node and a simulated-user node.

    The graph is built for each `converse` call: its nodes and edges close over that episode's
    transcript, limits and outcome, so one instance can run many episodes at once, and compiling
    two nodes costs far less than one request.
    """

    name = "langgraph"


    async def converse(self, transcript: Transcript, assistant: Participant, user: Participant, limits: Limits,
                       after_assistant: AfterAssistant | None = None) -> TerminationReason:
        """Run the graph from the opening user turn until an edge ends it; return the reason it decided."""
        pair = pair_of(assistant, user)
        start = [HumanMessage(content=m.content) if is_user(m) else AIMessage(content=m.content)
                 for m in opening(transcript)]
        outcome: dict[str, TerminationReason] = {}
        graph = build_graph(pair, transcript, limits, after_assistant, outcome)
        try:
            await graph.ainvoke({"messages": start}, config={"recursion_limit": 2 * limits.max_user_turns + 2})
        except BackendError:
            raise
        except Exception as exc:
            raise framework_failure("langgraph", exc) from exc
        return outcome["reason"]


def build_graph(pair: Pair, transcript: Transcript, limits: Limits, after_assistant: AfterAssistant | None,
                outcome: dict[str, TerminationReason]):
    """The compiled two-node graph of one episode; the edge that ends it puts its reason in `outcome["reason"]`."""
    assistant_model, user_model = client(pair.assistant), client(pair.user)
    assistant_system = [SystemMessage(content=pair.assistant.system_prompt)] if pair.assistant.system_prompt else []

    async def chat_bot(state: MessagesState) -> dict:
        shown = assistant_system + state["messages"]
        reply, said = await _generate(assistant_model, shown, transcript, "assistant", pair.assistant)
        transcript.append(strip_marker(said, limits.end_marker)[0])
        return {"messages": [reply]}

    async def simulated_user(state: MessagesState) -> dict:
        persona = [SystemMessage(content=pair.user.system_prompt)]
        shown = persona + swap_roles(state["messages"])
        reply, said = await _generate(user_model, shown, transcript, "user", pair.user)
        stored, stopped = strip_marker(said, limits.end_marker)
        if stored.content or not stopped:
            transcript.append(stored)
        return {"messages": [HumanMessage(content=reply.content)]}

    def after_chat_bot(state: MessagesState) -> str:
        final = None if after_assistant is None else (lambda: after_assistant(transcript.messages[-1], transcript))
        return _route(limits.first_stop(transcript, final_output=final), "user", outcome)

    def after_simulated_user(state: MessagesState) -> str:
        said = state["messages"][-1].content
        stopped = bool(limits.end_marker) and limits.end_marker in said
        return _route(limits.first_stop(transcript, user_stopped=stopped), "assistant", outcome)

    builder = StateGraph(MessagesState)
    builder.add_node("assistant", chat_bot)
    builder.add_node("user", simulated_user)
    builder.add_edge(START, "assistant")
    builder.add_conditional_edges("assistant", after_chat_bot, {"user": "user", END: END})
    builder.add_conditional_edges("user", after_simulated_user, {"assistant": "assistant", END: END})
    return builder.compile()


def client(side: Side) -> ChatOpenAI:
    """The LangChain model client of one side: its server, model, sampling, timeout and retries (on the wire
    recorder's shared httpx clients when the endpoint has them, so LangChain builds and caches none per URL)."""
    e, s = side.endpoint, side.sampling
    shared = {}
    if e.http_clients is not None:
        shared = {"http_client": e.http_clients[0], "http_async_client": e.http_clients[1], "default_headers": e.headers}
    return ChatOpenAI(base_url=e.base_url, api_key=e.api_key, model=e.model, temperature=s.temperature, max_tokens=s.max_tokens,
                      top_p=s.top_p, seed=s.seed, timeout=e.timeout_s, max_retries=e.max_retries, **shared)


def swap_roles(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The state as the simulated user is shown it: assistant replies as human messages, user turns as AI messages."""
    return [HumanMessage(content=m.content) if isinstance(m, AIMessage) else AIMessage(content=m.content) for m in messages]


def usage_of(reply: AIMessage, latency_s: float) -> Usage:
    """A reply's tokens, from LangChain's usage metadata or else the server's token_usage, and the time it took."""
    meta = reply.usage_metadata or {}
    tokens = reply.response_metadata.get("token_usage") or {}
    return Usage(meta.get("input_tokens", tokens.get("prompt_tokens", 0)),
                 meta.get("output_tokens", tokens.get("completion_tokens", 0)), latency_s)


async def _generate(model: ChatOpenAI, messages: list[BaseMessage], transcript: Transcript, role: str,
                    side: Side) -> tuple[AIMessage, Message]:
    began = time.perf_counter()
    reply = await model.ainvoke(messages)
    latency = time.perf_counter() - began
    finish = reply.response_metadata.get("finish_reason")
    return reply, generated(transcript, role, side, str(reply.text), usage_of(reply, latency), finish)


def _route(reason: TerminationReason | None, onward: str, outcome: dict[str, TerminationReason]) -> str:
    if reason is None:
        return onward
    outcome["reason"] = reason
    return END
