"""How the τ² simulated user's model is asked for its next turn: the framings (`user_modes`) a GoalUser can use.

τ²'s own framing (`instructed`) sends the user's prompt as the system message and the conversation role-flipped,
so the model writes the customer's turn as its own reply. Small models read the flipped chat as the usual one and
answer the agent's "How can I help you today?" with "How can I assist you today?": they speak as the agent. The
other framings keep the model out of the assistant's seat:

- `raw`: the conversation with true roles and the chat template's user turn opened for the model to continue.
- `transcript`: the conversation as a plain transcript (`Agent: …` / `Customer: …`) in one user message after
  the prompt, and the reply opened with `Customer:` for the model to continue the customer's line (where the
  backend can continue a message; elsewhere the transcript ends with the open `Customer:` line). The customer's
  first line is opened with `Customer: Hi,` (OPENER, kept in the stored turn): after the agent's greeting alone a
  small model otherwise repeats the greeting (measured: Qwen2.5-Coder-0.5B on the mock tasks' first turn,
  4 of 9 greetings repeated with `Customer:`, none with `Customer: Hi,`).
- `oneshot`: τ²'s framing with one synthetic example of a customer turn added to the prompt.

Measured (benchmarks/tau2_user_framings.py, the 9 mock tasks, Qwen2.5-Coder-0.5B assistant): Qwen2.5-Coder 0.5B and
1.5B users spoke as the agent in 78-79 % of their turns under `instructed` and in none under `transcript`, which
stated the task's request in 8-9 of 9 tasks; a `oneshot` 0.5B user copied the example's lamp instead of its own
request; SmolLM2-135M plays no customer under any framing (its requests are made up).

The reply of a `transcript` or `oneshot` user is cut where the model goes on to write the agent's next line, and a
leading `Customer:` label is dropped, so what reaches the assistant is the customer's words alone; τ²'s stop signals
in them still end the episode. `raw` and `transcript` users have no tools (telecom's user needs its phone's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, get_args

from testbed.specs.tau2 import Tau2UserMode
from testbed.transcript import is_user

TAU2_USER_MODES: tuple[str, ...] = get_args(Tau2UserMode)
"""Every framing a τ² scenario's `user_modes` may name (testbed.specs.tau2.Tau2UserMode)."""
FLIPPED_MODES = ("instructed", "oneshot")
"""The framings that send the conversation role-flipped, the user's model speaking as `assistant` (τ²'s view)."""

OPENER = "Hi,"
"""The words the customer's first line starts with in a `transcript` user's reply, so it speaks as the customer."""
AGENT_LABEL = "Agent"
CUSTOMER_LABEL = "Customer"
LABELS = {"assistant": AGENT_LABEL, "user": CUSTOMER_LABEL}

TRANSCRIPT_REQUEST = ("Here is your conversation with the customer service agent so far. You are the customer.\n\n"
                      "{transcript}\n\n"
                      "Write the customer's next message, and only that: one message, in the customer's words.")
"""The user message of a `transcript` user: the conversation, and what to write."""

ONESHOT_EXAMPLE = ("## Example of a customer's message\n"
                   "This exchange is from another, unrelated conversation; it shows how a customer speaks. "
                   "Do not reuse its details.\n\n"
                   f"{AGENT_LABEL}: Hi! How can I help you today?\n"
                   f"{CUSTOMER_LABEL}: Hi. The desk lamp I ordered last week arrived with a cracked base, and I'd like "
                   "a replacement. The order is under the name Sam Rivera.\n\n"
                   "In your conversation you are the customer: say what you need and answer the agent's questions; "
                   "the agent is the one who offers help.")
"""Added to the prompt of a `oneshot` user: one made-up customer turn (no benchmark's text) after the agent's greeting."""

_AGENT_LINE = re.compile(rf"\n\s*(?:{AGENT_LABEL}|Assistant|Representative)\s*:", re.IGNORECASE)
_CUSTOMER_LEAD = re.compile(rf"^\s*(?:{CUSTOMER_LABEL}|User)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class UserRequest:
    """What one framing sends for the user's next turn: the messages, whether the last is continued, the tools,
    extra request fields (`stop` before the agent's next line), and the words of the turn the request already
    holds (`opener`: the reply continues them, and the turn starts with them)."""

    messages: list[dict[str, Any]]
    continue_final: bool
    tools: list[dict[str, Any]] | None
    extra: dict[str, Any]
    opener: str = ""


def render_transcript(view: list[dict[str, Any]]) -> str:
    """The spoken turns of a true-role view as `Agent: …` / `Customer: …` lines, a blank line between turns."""
    return "\n\n".join(f"{LABELS[m['role']]}: {m['content']}" for m in view if m["role"] in LABELS)


def frame(mode: str, prompt: str, view: list[dict[str, Any]], tools: list[dict[str, Any]], *,
          can_continue: bool) -> UserRequest:
    """The request of a user in framing `mode`: `prompt` is its filled-in prompt (guidelines and scenario), `view` its
    conversation (role-flipped for FLIPPED_MODES, true roles otherwise), `tools` its own (telecom's phone), and
    `can_continue` whether its backend continues a final message (the `transcript` reply is pre-filled only then)."""
    system = {"role": "system", "content": prompt}
    if mode == "raw":
        return UserRequest([system, *view, {"role": "user", "content": ""}], True, None, {})
    if mode == "transcript":
        text = TRANSCRIPT_REQUEST.format(transcript=render_transcript(view))
        stop = {"stop": [f"\n{AGENT_LABEL}:"]}
        if not can_continue:
            return UserRequest([system, {"role": "user", "content": f"{text}\n\n{CUSTOMER_LABEL}:"}], False, None, stop)
        opener = OPENER if not any(is_user(m) for m in view) else ""
        reply = {"role": "assistant", "content": f"{CUSTOMER_LABEL}: {opener}" if opener else f"{CUSTOMER_LABEL}:"}
        return UserRequest([system, {"role": "user", "content": text}, reply], True, None, stop, opener)
    if mode == "oneshot":
        return UserRequest([{"role": "system", "content": f"{prompt}\n\n{ONESHOT_EXAMPLE}"}, *view], False, tools or None,
                           {"stop": [f"\n{AGENT_LABEL}:"]})
    if mode == "instructed":
        return UserRequest([system, *view], False, tools or None, {})
    raise ValueError(f"unknown τ² user mode {mode!r} | fix: use one of {', '.join(TAU2_USER_MODES)}")


def customer_words(mode: str, text: str, opener: str = "") -> str:
    """The customer's own words in a reply: for `transcript` and `oneshot`, the request's `opener` and the reply,
    cut before a line the model goes on to write for the agent, a leading `Customer:` label dropped; other
    framings' replies as generated."""
    if mode not in ("transcript", "oneshot") or not (text or opener):
        return text
    text = opener + text
    cut = _AGENT_LINE.search("\n" + text)
    kept = ("\n" + text)[: cut.start()] if cut else "\n" + text
    return _CUSTOMER_LEAD.sub("", kept.lstrip("\n"), count=1).strip()
