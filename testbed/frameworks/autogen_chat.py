"""AutoGen AgentChat 0.7: the assistant and the simulated user as two `AssistantAgent`s in a `RoundRobinGroupChat`.

Built the way AgentChat's documentation builds a two-agent team: each agent has its own
`OpenAIChatCompletionClient` pointed at its model's server (base_url, a `model_info` for a model
OpenAI does not know, the sampling as create arguments), the team is started with the opening user
turn as its task, and it stops on AgentChat's own conditions: `TextMentionTermination` on the end
marker (from the simulated user only), `MaxMessageTermination` on the turn limit and
`TokenUsageTermination` on the token budget; which stop it was is then decided by `Limits.first_stop`,
the native loop's order. What AgentChat does to the conversation, and the wire log shows: every
agent keeps its own model context, in which its own turns are `assistant` messages and everyone
else's (the opening task included, which the simulated user therefore sees as someone else's words)
are `user` messages carrying the speaker's `name`; the seed is fixed for the episode (the native
loop adds the turn index per user turn). A cancelled episode (Ctrl-C, SIGTERM) cancels the team's cancellation
token and stops the team within seconds (testbed.frameworks.prompt_stop), instead of letting it play on to its end.
"""

from __future__ import annotations

import time

from testbed.backends.base import BackendError
from testbed.frameworks.base import AfterAssistant
from testbed.frameworks.pair import Pair, Side, generated, opening, pair_of
from testbed.frameworks.prompt_stop import stopping_promptly
from testbed.frameworks.run_log import framework_failure
from testbed.loop.orchestrator import Limits, TerminationReason, strip_marker, user_turn_count
from testbed.transcript import Message, Transcript, Usage, is_user

ASSISTANT, USER = "assistant", "simulated_user"
"""Agent names (AgentChat wants identifiers, and reserves `user` for the task's source)."""


def model_client(side: Side, function_calling: bool = False, client_class: type | None = None):
    """An OpenAIChatCompletionClient (or `client_class`, a subclass of it) on the side's server, with its sampling as
    create arguments (on the wire recorder's shared httpx client when the endpoint has one), able to call tools when
    `function_calling`."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    make = client_class or OpenAIChatCompletionClient
    s, e = side.sampling, side.endpoint
    extra = {"seed": s.seed} if s.seed is not None else {}
    if e.http_clients is not None:
        extra.update(http_client=e.http_clients[1], default_headers=e.headers)
    return make(
        model=e.model, base_url=e.base_url, api_key=e.api_key, timeout=e.timeout_s, max_retries=e.max_retries,
        model_info={"vision": False, "function_calling": function_calling, "json_output": False, "family": "unknown",
                    "structured_output": False},
        temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p, **extra,
    )


def termination(transcript: Transcript, limits: Limits, after_assistant: AfterAssistant | None, seen: list[TerminationReason]):
    """AgentChat's conditions for the scenario's stops, combined with `|`."""
    from autogen_agentchat.conditions import FunctionalTermination, MaxMessageTermination, TextMentionTermination, TokenUsageTermination

    remaining_user_turns = limits.max_user_turns - user_turn_count(transcript)
    new_messages = 1 + 2 * remaining_user_turns - (0 if limits.reply_to_last_user_turn else 1)
    condition = MaxMessageTermination(len(transcript.dialogue()) + new_messages)
    if limits.end_marker:
        condition = condition | TextMentionTermination(limits.end_marker, sources=[USER])
    if limits.token_budget is not None:
        condition = condition | TokenUsageTermination(max_completion_token=limits.token_budget - transcript.usage().completion_tokens)
    if after_assistant is not None:
        condition = condition | FunctionalTermination(lambda _: bool(seen))
    return condition


class AutoGenDialogues:
    """Runs the pair as an AgentChat team; the messages it streams become the transcript as they come."""

    name = "autogen"


    async def converse(self, transcript: Transcript, assistant, user, limits: Limits,
                       after_assistant: AfterAssistant | None = None) -> TerminationReason:
        """Run the team from the opening user turn until one of its termination conditions fires."""
        from autogen_agentchat.agents import AssistantAgent
        from autogen_agentchat.messages import TextMessage
        from autogen_agentchat.teams import RoundRobinGroupChat
        from autogen_core import CancellationToken

        pair = pair_of(assistant, user)
        task = [TextMessage(content=m.content, source="user" if is_user(m) else ASSISTANT) for m in opening(transcript)]
        clients = [model_client(pair.assistant), model_client(pair.user)]
        decided: list[TerminationReason] = []
        agents = [AssistantAgent(ASSISTANT, clients[0], system_message=pair.assistant.system_prompt),
                  AssistantAgent(USER, clients[1], system_message=pair.user.system_prompt)]
        team = RoundRobinGroupChat(agents, termination_condition=termination(transcript, limits, after_assistant, decided))
        stopped = False
        token = CancellationToken()

        async def play() -> None:
            nonlocal stopped
            since = time.perf_counter()
            async for event in team.run_stream(task=task, output_task_messages=False, cancellation_token=token):
                if isinstance(event, TextMessage) and event.source in (ASSISTANT, USER):
                    stopped = self._keep(transcript, pair, event, limits, time.perf_counter() - since) or stopped
                    if event.source == ASSISTANT and after_assistant is not None and not decided:
                        if (reason := after_assistant(transcript.messages[-1], transcript)):
                            decided.append(reason)
                    since = time.perf_counter()

        try:
            await stopping_promptly(play(), token.cancel)
        except BackendError:
            raise
        except Exception as exc:
            raise framework_failure(self.name, exc) from exc
        finally:
            for client, side in zip(clients, (pair.assistant, pair.user)):
                if side.endpoint.http_clients is None:
                    await client.close()
        return self._reason(transcript, limits, stopped, decided)

    @staticmethod
    def _keep(transcript: Transcript, pair: Pair, event, limits: Limits, latency_s: float) -> bool:
        """Append one streamed message; True when it was the user's stop (the marker stripped, an empty turn not kept)."""
        role, side = ("assistant", pair.assistant) if event.source == ASSISTANT else ("user", pair.user)
        usage = event.models_usage
        message = generated(transcript, role, side, event.content,
                            Usage(usage.prompt_tokens, usage.completion_tokens, latency_s) if usage else Usage(0, 0, latency_s))
        stopped = False
        if is_user(message):
            message, stopped = strip_marker(message, limits.end_marker)
        if message.content or not stopped:
            transcript.append(message)
        return stopped

    @staticmethod
    def _reason(transcript: Transcript, limits: Limits, stopped: bool, decided: list[TerminationReason]) -> TerminationReason:
        """Which of the scenario's stops the team's termination was: `Limits.first_stop`, the native loop's order,
        with the final output `after_assistant` gave in the stream."""
        if reason := limits.first_stop(transcript, user_stopped=stopped, final_output=lambda: decided[0] if decided else None):
            return reason
        last: Message | None = transcript.messages[-1] if transcript.messages else None
        raise BackendError(f"autogen: the team stopped after {last.role if last else 'nothing'} without any of the scenario's stops")
