"""The conversation before a judged user turn: what a judge, and a person labelling, reads besides the request and the answer.

A later user turn can only be told apart by what came before it: a user repeating their own earlier turn with
one detail changed, a loop across turns, an answer to a question the assistant never asked. So every judged turn
carries the messages between the episode's request and the answer it replies to, in order, as `Earlier` entries.

Two decisions, written down here because every reader of the context depends on them:

- **Tool traffic is marked, never shown.** The simulated user never saw the assistant's tool calls or their
  results, and a benchmark's results hold its database text; so a run of tool messages becomes one entry saying
  who used tools and how many calls there were, with no tool name, argument or result.
- **Capped.** Only the last `CONTEXT_MESSAGES` entries are kept (an entry saying how many were left out goes
  first), and each text keeps its first and last `CONTEXT_CHARS / 2` characters: judge prompts and features stay
  bounded on a long τ² conversation, and what is kept is what the turn most likely answers to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from testbed.transcript import ASSISTANT, TOOL, TOOL_CALLS_COLUMN, USER, is_assistant, is_system, is_tool, is_user, role_of

CONTEXT_MESSAGES = 8
"""Earlier entries a judged turn keeps (the most recent ones)."""
CONTEXT_CHARS = 800
"""Characters each earlier text keeps (its head and tail, joined by an ellipsis)."""
ELLIPSIS = " … "
WHO = {USER: "user", ASSISTANT: "assistant"}
"""How a tool note names who called."""


@dataclass(frozen=True)
class Earlier:
    """One earlier message of the conversation as a judge reads it: `USER`, `ASSISTANT`, or `TOOL` (a marked run of tool traffic)."""

    role: str
    text: str

    def as_dict(self) -> dict[str, str]:
        """The entry as the labelled files and annotation items store it: `{"role": ..., "content": ...}`."""
        return {"role": self.role, "content": self.text}


def clipped(text: str, limit: int = CONTEXT_CHARS) -> str:
    """`text` cut to about `limit` characters: its head and its tail, joined by an ellipsis."""
    if len(text) <= limit:
        return text
    half = max(1, (limit - len(ELLIPSIS)) // 2)
    return text[:half] + ELLIPSIS + text[-half:]


def _tool_note(calls: dict[str, int]) -> str:
    parts = [f"the {WHO[role]} used tools ({n} call{'s' if n != 1 else ''})" for role, n in calls.items() if n]
    return "[" + "; ".join(parts or ["tool results arrived"]) + "]"


def earlier_entries(messages: Iterable[Any]) -> list[Earlier]:
    """Every message of an episode (rows or `Message`s in turn order) as entries: spoken ones as they are, each run of
    tool traffic as one marked entry. System messages are left out. Nothing is capped here (see `capped`)."""
    out: list[Earlier] = []
    calls: dict[str, int] = {}
    pending = False
    for m in messages:
        if is_system(m):
            continue
        count = _call_count(m)
        if is_tool(m) or count:
            pending = True
            if count:
                who = USER if is_user(m) else ASSISTANT
                calls[who] = calls.get(who, 0) + count
            continue
        if pending:
            out.append(Earlier(TOOL, _tool_note(calls)))
            calls, pending = {}, False
        out.append(Earlier(USER if is_user(m) else ASSISTANT if is_assistant(m) else str(role_of(m)), _content(m)))
    if pending:
        out.append(Earlier(TOOL, _tool_note(calls)))
    return out


def _content(message: Any) -> str:
    text = message.content if hasattr(message, "content") else message["content"]
    return text or ""


def _call_count(message: Any) -> int:
    """How many tools a message calls: a `Message`'s calls, or a stored row's tool-calls column (0 when it calls none)."""
    if hasattr(message, "tool_calls"):
        return len(message.tool_calls)
    try:
        raw = message[TOOL_CALLS_COLUMN]
    except (KeyError, IndexError, TypeError):
        return 0
    if not raw:
        return 0
    try:
        return max(1, len(json.loads(raw)))
    except (ValueError, TypeError):
        return 1


def capped(entries: Sequence[Earlier], messages: int = CONTEXT_MESSAGES, chars: int = CONTEXT_CHARS) -> tuple[Earlier, ...]:
    """The last `messages` entries, each clipped to `chars`; an entry first says how many earlier ones were left out."""
    kept = [Earlier(e.role, clipped(e.text, chars)) for e in entries[-messages:]] if messages else []
    left_out = len(entries) - len(kept)
    return tuple([Earlier(TOOL, f"[{left_out} earlier message{'s' if left_out != 1 else ''} left out]")] if left_out > 0 else []) + tuple(kept)


def from_dicts(rows: Iterable[dict] | None) -> tuple[Earlier, ...]:
    """Entries from stored `{"role", "content"}` dicts (a labelled file's `context`), as they were written."""
    return tuple(Earlier(str(r.get("role", "")), str(r.get("content") or "")) for r in rows or ())


def user_texts(context: Sequence[Earlier]) -> list[str]:
    """The simulated user's earlier turns in the context, oldest first."""
    return [e.text for e in context if e.role == USER]


def assistant_texts(context: Sequence[Earlier]) -> list[str]:
    """The assistant's earlier answers in the context, oldest first."""
    return [e.text for e in context if e.role == ASSISTANT]


def position(context: Sequence[Earlier]) -> int:
    """The turn's ordinal among the simulated user's replies: 1 for the first reply to an answer, 2 for the next, …"""
    return 1 + len(user_texts(context))


def rendered(context: Sequence[Earlier], user: str = "USER", assistant: str = "ASSISTANT") -> str:
    """The context as plain text, one `ROLE: text` block per entry (tool notes bare); empty when there is none."""
    names = {USER: user, ASSISTANT: assistant}
    return "\n\n".join(f"{names[e.role]}: {e.text}" if e.role in names else e.text for e in context)
