"""What τ²'s orchestrator did, written into the testbed's episode: its new messages recorded in order, its stop mapped.

τ² keeps its trajectory as its own messages; the episode records them through the seam every framework
uses (`ToolEpisode.record` and `record_results`), so the transcript has the shape of every other
framework's: the assistant's and the user's messages with their speaker, sampling, tokens and time, each
batch of tool results as one step, τ²'s stop signals stripped. The opening (τ²'s greeting or the task's
message history) is already the transcript's and is not recorded again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from testbed.backends.base import BackendError
from testbed.frameworks.pair import Pair, Side
from testbed.frameworks.tool_episode import ToolEpisode
from testbed.loop.orchestrator import TerminationReason
from testbed.scenarios.tau2.evaluation import TAU2_TERMINATION
from testbed.scenarios.tau2.trajectory import from_tau2
from testbed.transcript import USER, Message, Usage, is_assistant, is_tool

ERRORS = ("agent_error", "user_error")
"""τ²'s terminations that say a side broke its communication protocol: the episode's error, never a score."""


def sampling_of(side: Side, role: str) -> dict[str, Any]:
    """The sampling stored beside a generated message, as the native participants store theirs (the user's mode too)."""
    s = side.sampling
    out: dict[str, Any] = {"temperature": s.temperature, "max_tokens": s.max_tokens, "top_p": s.top_p}
    if s.seed is not None:
        out["seed"] = s.seed
    return {**out, "mode": "instructed"} if role == USER else out


def generated_message(message: Message, tau2_message: Any, side: Side, latency_s: float) -> Message:
    """A converted τ² message with who generated it and how: the side's name and sampling, litellm's token
    counts and finish reason, the time its step took."""
    tokens = tau2_message.usage or {}
    raw = tau2_message.raw_data or {}
    return replace(message, speaker=side.name, sampling=sampling_of(side, message.role),
                   usage=Usage(tokens.get("prompt_tokens") or 0, tokens.get("completion_tokens") or 0, latency_s),
                   finish_reason=raw.get("finish_reason"))


def record_trajectory(episode: ToolEpisode, trajectory: list[Any], opened: int, latency_s: dict[int, float], pair: Pair) -> None:
    """Record `trajectory[opened:]` (τ²'s messages after the opening) into the episode, in order.

    Consecutive tool messages are one batch of results (τ²'s MultiToolMessage), one step; their failures
    are added to the desk's count as they are recorded, since τ²'s environment ran the calls, so the
    episode's limits count what τ²'s orchestrator counted. `latency_s` holds each generated message's step time
    by its index in `trajectory`.
    """
    converted = from_tau2(trajectory, 0)
    batch: list[Message] = []
    for index in range(opened, len(trajectory)):
        message = converted[index]
        if is_tool(message):
            batch.append(message)
            if index + 1 == len(trajectory) or not is_tool(converted[index + 1]):
                episode.desk.errors += sum(m.tool_result.error for m in batch)
                episode.record_results(batch)
                batch = []
            continue
        side = pair.assistant if is_assistant(message) else pair.user
        episode.record(generated_message(message, trajectory[index], side, latency_s.get(index, 0.0)))


def termination_of(episode: ToolEpisode, reason: str) -> TerminationReason:
    """The testbed's termination for τ²'s `reason`, which the recorded episode must have reached too.

    τ²'s user stop is the testbed's USER_STOP or TRANSFER, by the signal the user wrote (the episode's
    stop tells which); a protocol error is a BackendError with τ²'s reason. Where the episode's step
    rules stopped elsewhere than τ²'s orchestrator (the testbed ends on an assistant's `###STOP###`, which
    τ²'s LLMAgent sends to the user as text), the transcript cannot be both: a BackendError saying so.
    """
    if reason in ERRORS:
        raise BackendError(f"tau2: τ²'s orchestrator ended the episode with {reason}")
    stopped = episode.stopped
    if stopped is None or TAU2_TERMINATION.get(stopped) != reason:
        raise BackendError(f"tau2: τ²'s orchestrator ended on {reason} where the episode's step rules "
                           f"{'ended on ' + str(stopped) if stopped is not None else 'had not ended'}")
    return stopped
