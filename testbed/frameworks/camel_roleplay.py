"""CAMEL's two-agent role-playing (camel-ai) as a framework: an AI user and an AI assistant in a `RolePlaying` society.

The pair (testbed.frameworks.pair) becomes two `ChatAgent`s handed to `RolePlaying` as its documented
`assistant_agent` / `user_agent`, with no task specifier, planner or critic. Each agent's system message
is the pair's own prompt (the assistant's, when it has one; the user's persona), built as RolePlaying's
generator builds one (role name and role type, the prompt as content), so neither gets CAMEL's
"Never forget you are a ... and I am a ..." role-playing prompt. Each agent's model is an
OpenAI-compatible CAMEL model on its Side's endpoint, with its sampling as `model_config_dict`.

What CAMEL does differently from the native loop:

- Memory and roles. Each agent keeps its own `ChatHistoryMemory` and presents it from its own side: the
  AI user's request is its persona as the system message, its own turns (the dataset's opening
  included, recorded with `record_message` "as if it were an answer of the ChatAgent") as role
  "assistant", and the assistant's replies as role "user" -- the flip native does in its view, here
  done by CAMEL's memory. The assistant's request has true roles. Earlier dialogue turns of a scripted
  opening are written into both memories the same way before the assistant answers the last one.
- The loop. CAMEL's own first instruction (`init_chat`) is not used: the assistant answers the opening
  first, then the society's step order runs -- the user answers the assistant's message, then the
  assistant answers the user's. `RolePlaying.astep` does both halves in one call, with no way to stop
  between them, so `converse` steps the society's two agents itself, exactly as `astep` does, to end on
  a user turn (a stop, or the last allowed user turn with no reply). RolePlaying refuses an agent
  without a system message, so an assistant without a system prompt runs the same steps without the
  society object around the two agents.
- Stops. A user turn ends the episode (USER_STOP) on CAMEL's documented `CAMEL_TASK_DONE` or on the
  scenario's end marker, both stripped from what is stored (a turn that was only that is not stored),
  or when CAMEL reports the user agent terminated (the marker is stripped from an assistant's stored
  reply too, as native does). An assistant agent that CAMEL reports terminated with a message ends it
  as ASSISTANT_DONE, when none of the scenario's stops applies first: after each turn the loop asks
  `Limits.first_stop`, the native loop's stop order. CAMEL reports some failures as a terminated
  response with no message (and the reason in `info`) instead of raising: those are BackendErrors.
- Requests. CAMEL sends the `model_config_dict` and nothing else (no tools, no response format). Its
  model backend strips `<think>...</think>` from the messages it sends and moves it out of replies
  into `reasoning_content`, so a reasoning model's stored turns lack it. The seed is the Side's seed at
  every turn (native adds the turn index to the user's seed per turn). CAMEL's rate-limit retry is off
  (`retry_attempts=1`): retries are the endpoint's, in the OpenAI client.
- Context window. CAMEL 0.2.90's context creator no longer truncates: each agent sends its whole
  memory, as native does. Its automatic summarisation (at half the window it assumes from the model
  name, which would add an unattributed summarising request) is off, and the window is given as
  CAMEL's own value for a model it does not know, so none warns on the root logger.

CAMEL is imported here only. Its logging stays off (`CAMEL_LOGGING_DISABLED`, unless set otherwise), and
it has no telemetry unless AgentOps, Langfuse or Traceroot is installed and switched on by environment.
Token counting is offline (UTF-8 bytes): CAMEL's default counter fetches a tiktoken encoding from the net.
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Awaitable, Callable

from testbed.backends.base import BackendError
from testbed.frameworks.base import AfterAssistant
from testbed.frameworks.pair import Pair, Side, generated, opening, pair_of
from testbed.frameworks.run_log import framework_failure
from testbed.loop.orchestrator import Limits, TerminationReason, strip_marker
from testbed.loop.participants import Participant
from testbed.transcript import Message, Transcript, Usage, is_user


def allow_mcp2() -> None:
    """Let camel-ai 0.2.90 import under mcp 2 (vLLM 0.32 requires mcp>=2; camel pins no mcp version).

    mcp 2 renamed `FastMCP` to `mcp.server.mcpserver.MCPServer` and left `mcp.server.fastmcp` as a module
    that raises on import. camel names FastMCP in two places that run at import time and never use it on
    the role-playing path: `camel.toolkits.base.BaseToolkit` imports `from mcp.server import FastMCP` in its
    class body, only for a type annotation, and camel's `@MCPServer()` class decorator (on its toolkits)
    imports `mcp.server.fastmcp.FastMCP`, which it instantiates only when a toolkit is built. Both names
    are aliased to MCPServer, only when mcp itself lacks them.
    """
    import mcp.server

    if not hasattr(mcp.server, "FastMCP"):
        mcp.server.FastMCP = mcp.server.MCPServer
    try:
        import mcp.server.fastmcp  # noqa: F401
    except ModuleNotFoundError:
        shim = types.ModuleType("mcp.server.fastmcp", "mcp 1's FastMCP as mcp 2's MCPServer, for camel-ai (testbed shim)")
        shim.FastMCP = mcp.server.MCPServer
        sys.modules["mcp.server.fastmcp"] = shim


allow_mcp2()
os.environ.setdefault("CAMEL_LOGGING_DISABLED", "true")

import camel.logger  # noqa: E402
from camel.agents import ChatAgent  # noqa: E402
from camel.messages import BaseMessage  # noqa: E402
from camel.models import ModelFactory  # noqa: E402
from camel.societies import RolePlaying  # noqa: E402
from camel.types import ModelPlatformType, OpenAIBackendRole, RoleType  # noqa: E402
from camel.utils import BaseTokenCounter  # noqa: E402

if os.environ["CAMEL_LOGGING_DISABLED"].lower() == "true":
    camel.logger.disable_logging()

TASK_DONE = "CAMEL_TASK_DONE"
"""The word CAMEL's role-playing user writes when the task is done (the documented stop of role-playing)."""

UNKNOWN_MODEL_WINDOW = 999_999_999
"""The context window CAMEL assumes for a model name it does not know; unused while summarisation is off."""


class ByteCounter(BaseTokenCounter):
    """Counts UTF-8 bytes as tokens: offline, and only CAMEL's own bookkeeping (`info["num_tokens"]`) reads it."""

    def count_tokens_from_messages(self, messages) -> int:
        """The bytes of every message's content."""
        return sum(len(str(m.get("content") or "").encode()) for m in messages)

    def encode(self, text: str) -> list[int]:
        """The text's UTF-8 bytes."""
        return list(text.encode())

    def decode(self, token_ids: list[int]) -> str:
        """The text of UTF-8 bytes."""
        return bytes(token_ids).decode(errors="replace")


async def with_clients(run: Callable[[list], Awaitable[TerminationReason]]) -> TerminationReason:
    """`run(clients)`, CAMEL's exceptions as the episode's BackendError, and the OpenAI clients it added to `clients`
    (`camel_model`'s) closed when it ends, however it ends."""
    clients: list = []
    try:
        return await run(clients)
    except BackendError:
        raise
    except Exception as exc:
        raise framework_failure("camel", exc) from exc
    finally:
        for client in clients:
            await client.close()


def camel_model(side: Side, clients: list):
    """The OpenAI-compatible CAMEL model of one Side: its endpoint, its sampling, CAMEL's token bookkeeping offline.

    The model's OpenAI clients are made here. On the wire recorder's route they use its shared httpx
    clients, which the run closes; otherwise the async one is added to `clients`, so the episode closes
    it: a CAMEL model never closes the client it makes itself, which leaves its sockets open until
    garbage collection.
    """
    import openai

    e, s = side.endpoint, side.sampling
    common = {"base_url": e.base_url, "api_key": e.api_key, "timeout": e.timeout_s, "max_retries": e.max_retries}
    if e.http_clients is not None:
        sync = openai.OpenAI(**common, default_headers=e.headers, http_client=e.http_clients[0])
        client = openai.AsyncOpenAI(**common, default_headers=e.headers, http_client=e.http_clients[1])
    else:
        sync, client = None, openai.AsyncOpenAI(**common)
        clients.append(client)
    config = {"temperature": s.temperature, "max_tokens": s.max_tokens, "top_p": s.top_p}
    if s.seed is not None:
        config["seed"] = s.seed
    return ModelFactory.create(model_platform=ModelPlatformType.OPENAI_COMPATIBLE_MODEL, model_type=e.model, url=e.base_url,
                               api_key=e.api_key, model_config_dict=config, timeout=e.timeout_s, max_retries=e.max_retries,
                               token_counter=ByteCounter(), client=sync, async_client=client)


def chat_agent(side: Side, role_type: RoleType, clients: list) -> ChatAgent:
    """A ChatAgent for one Side: its prompt as a role-playing system message, its model on the Side's endpoint (`camel_model`)."""
    model = camel_model(side, clients)
    system = None if side.system_prompt is None else BaseMessage(side.name, role_type, None, side.system_prompt)
    return ChatAgent(system, model=model, token_limit=UNKNOWN_MODEL_WINDOW, summarize_threshold=None, retry_attempts=1)


def society(assistant: ChatAgent, user: ChatAgent, assistant_name: str, user_name: str):
    """The RolePlaying society of the two agents; without an assistant system message (which RolePlaying refuses)
    a plain holder of the same two agents."""
    if assistant.system_message is None:
        return types.SimpleNamespace(assistant_agent=assistant, user_agent=user)
    return RolePlaying(assistant_name, user_name, with_task_specify=False, with_task_planner=False, with_critic_in_the_loop=False,
                       assistant_agent=assistant, user_agent=user)


async def step(agent: ChatAgent, message: BaseMessage, who: str):
    """One agent's answer to `message`: the response, its message and its usage (a response without one: BackendError)."""
    start = time.perf_counter()
    response = await agent.astep(message)
    latency = time.perf_counter() - start
    if response.msg is None:
        reasons = ", ".join(str(r) for r in response.info.get("termination_reasons") or ()) or "no message"
        raise BackendError(f"camel: the {who} agent gave no message ({reasons})")
    usage = response.info.get("usage") or {}
    return response, response.msg, Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, latency)


def finish_reason(response) -> str | None:
    """The finish reason CAMEL reports for the response's message."""
    reasons = response.info.get("termination_reasons") or [None]
    return reasons[0]


def remember(assistant: ChatAgent, user: ChatAgent, earlier: list[Message]) -> None:
    """Write the opening's earlier turns into both memories, each agent's own turns as its answers."""
    for m in earlier:
        if is_user(m):
            assistant.update_memory(BaseMessage.make_user_message(m.speaker, m.content), OpenAIBackendRole.USER)
            user.record_message(BaseMessage.make_assistant_message(m.speaker, m.content))
        else:
            assistant.record_message(BaseMessage.make_assistant_message(m.speaker, m.content))
            user.update_memory(BaseMessage.make_user_message(m.speaker, m.content), OpenAIBackendRole.USER)


class CamelDialogues:
    """CAMEL role-playing: the assistant answers the dataset's opening, then the AI user and the assistant
    alternate in the society's step order until a stop (see the module docstring)."""

    name = "camel"


    async def converse(self, transcript: Transcript, assistant: Participant, user: Participant, limits: Limits,
                       after_assistant: AfterAssistant | None = None) -> TerminationReason:
        """Run the role-playing from the opening user turn; return why it ended."""
        pair = pair_of(assistant, user)
        dialogue = opening(transcript)
        return await with_clients(lambda clients: self._run(transcript, pair, dialogue, limits, after_assistant, clients))

    async def _run(self, transcript: Transcript, pair: Pair, dialogue: list[Message], limits: Limits,
                   after_assistant: AfterAssistant | None, clients: list) -> TerminationReason:
        """The role-playing itself: RolePlaying.astep's two halves, assistant first, with the stops between them."""
        roles = society(chat_agent(pair.assistant, RoleType.ASSISTANT, clients), chat_agent(pair.user, RoleType.USER, clients),
                        pair.assistant.name, pair.user.name)
        *earlier, first = dialogue
        remember(roles.assistant_agent, roles.user_agent, earlier)
        roles.user_agent.record_message(BaseMessage.make_assistant_message(first.speaker, first.content))
        message = BaseMessage.make_user_message(first.speaker, first.content)
        while True:
            response, reply, usage = await step(roles.assistant_agent, message, "assistant")
            turn = generated(transcript, "assistant", pair.assistant, reply.content, usage, finish_reason(response))
            turn, _ = strip_marker(turn, limits.end_marker)
            transcript.append(turn)
            final = None if after_assistant is None else (lambda: after_assistant(turn, transcript))
            if reason := limits.first_stop(transcript, final_output=final, assistant_done=response.terminated):
                return reason
            response, message, usage = await step(roles.user_agent, reply, "user")
            turn = generated(transcript, "user", pair.user, message.content, usage, finish_reason(response))
            turn, marked = strip_marker(turn, limits.end_marker)
            turn, done = strip_marker(turn, TASK_DONE)
            stopped = marked or done or response.terminated
            if turn.content or not stopped:
                transcript.append(turn)
            if reason := limits.first_stop(transcript, user_stopped=stopped):
                return reason
