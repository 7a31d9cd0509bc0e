"""The simulator-fault gold set's episodes: model-written τ² transcripts kept without any of τ²'s own text.

The gold set (judges/faults-gold/) labels simulated-user turns of τ² episodes with τ²'s user-error tags and
severities. Its transcripts are committed, but τ²'s files stay in the package: an exported episode keeps what the
models wrote (user and assistant turns, tool calls with their arguments) and drops what came from τ² (the
assistant's system prompt with the domain policy, tool results drawn from the database, a task's scripted message
history). `load_episode` puts those back from the installed package: the scripted history from the task, and every
tool result by replaying the episode's tool calls, in order, in a fresh environment with the task's initial state (τ²'s
tools are deterministic, so the replay gives the results the episode saw; a result whose error flag differs from the
stored one is a `GoldMismatch`).

An exported episode is one JSON object: `id` (domain/episode id), the conditions (domain, task_id, user_model,
assistant_model, user_mode, temperature), termination, reward and `messages` (turn, role, speaker, content or None,
tool_calls as [id, name, arguments], tool_result as {call_id, name, requestor, error}). `split` says whether the
episode is held out (`HELD_OUT_SHARE` of episodes, chosen by a hash of the id before any label was seen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testbed.scenarios.base import hashed_share
from testbed.scenarios.tau2.trajectory import GREETING, SCRIPTED
from testbed.transcript import Message, ToolCall, is_system, is_tool, is_user

HELD_OUT_SHARE = 0.4
"""The share of gold episodes held out of every choice (rules, prompt) until the final measurement."""


class GoldMismatch(ValueError):
    """An exported episode does not replay against the installed τ² (another version, or a wrong task)."""


@dataclass(frozen=True)
class GoldEpisode:
    """One gold episode loaded for use: its τ² task, its messages with τ²'s text restored, and its conditions."""

    id: str
    domain: str
    task: Any
    messages: list[Message]
    termination: str
    record: dict


def split_of(episode_key: str) -> str:
    """`heldout` or `dev`: a fixed hash of the episode's key, so the split never depends on its labels."""
    return "heldout" if hashed_share(episode_key) < HELD_OUT_SHARE else "dev"


def export_episode(episode: Any, domain: str, messages: list[Message]) -> dict:
    """One stored episode (an `episodes_df` row) and its messages as a gold record without τ²'s text."""
    key = f"{domain}/{episode.episode_id}"
    out = []
    for m in messages:
        if is_system(m):
            continue
        scripted = m.speaker == SCRIPTED
        content = None if is_tool(m) or (scripted and m.content != GREETING) else m.content
        row = {"turn": m.turn_index, "role": m.role, "speaker": m.speaker, "content": content}
        if m.tool_calls:
            row["tool_calls"] = [[c.id, c.name, c.arguments] for c in m.tool_calls]
        if m.tool_result is not None:
            r = m.tool_result
            row["tool_result"] = {"call_id": r.call_id, "name": r.name, "requestor": r.requestor, "error": r.error}
        out.append(row)
    reward = None if episode.task_score != episode.task_score or episode.task_score is None else float(episode.task_score)
    return {"id": key, "split": split_of(key), "domain": domain, "task_id": episode.item_id,
            "user_model": episode.user_model, "assistant_model": episode.assistant_model, "user_mode": episode.user_mode,
            "temperature": float(episode.temperature), "termination": episode.termination or "", "reward": reward,
            "messages": out}


def load_episode(record: dict) -> GoldEpisode:
    """A gold record with τ²'s text restored from the installed package (module docstring); GoldMismatch when the
    installed τ² lacks its task or its tool calls do not replay as they ran."""
    from testbed.scenarios.tau2.domains import domain
    from testbed.scenarios.tau2.episode import start_episode

    tau2_domain = domain(record["domain"])
    task = tau2_domain.tasks.get(record["task_id"])
    if task is None:
        raise GoldMismatch(f"{record['id']}: the installed τ² has no task {record['task_id']!r} in {record['domain']}")
    opening, desk = start_episode(task, tau2_domain.new_environment, "", SCRIPTED)
    scripted = iter(m for m in opening.messages if m.speaker == SCRIPTED and not is_system(m))
    calls: dict[str, ToolCall] = {}
    messages = []
    for row in record["messages"]:
        content = row["content"]
        result = row.get("tool_result")
        tool_calls = tuple(ToolCall(*c) for c in row.get("tool_calls", ()))
        calls.update((c.id, c) for c in tool_calls)
        if row["speaker"] == SCRIPTED and content is None:
            content = next(scripted).content
        if result is not None:
            call = calls.get(result["call_id"])
            if call is None:
                raise GoldMismatch(f"{record['id']} turn {row['turn']}: a tool result answers no earlier call")
            replayed = desk.answer(call, result["requestor"], row["turn"])
            if replayed.tool_result.error != result["error"]:
                raise GoldMismatch(f"{record['id']} turn {row['turn']}: {call.name} replayed with "
                                   f"error={replayed.tool_result.error}, stored error={result['error']}")
            messages.append(replayed)
            continue
        messages.append(Message(row["role"], content or "", row["speaker"], row["turn"], tool_calls=tool_calls))
    return GoldEpisode(record["id"], record["domain"], task, messages, record["termination"], record)


def user_turns(messages: list[Message]) -> list[Message]:
    """The spoken user turns the simulated user wrote (not a task's scripted history): what the gold set labels."""
    return [m for m in messages if is_user(m) and m.spoken and m.speaker != SCRIPTED]
