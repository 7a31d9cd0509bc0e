"""A hand-built τ²-style episode with tool traffic, stored, for the tests of every face that reads it.

The assistant greets, the user asks, the assistant calls two tools (the second one's name,
arguments and result hold the hostile corpus, and it fails), reads one long result, answers; the
user then calls its own tool (dual-control), reads that result, and speaks again. Generated user
turns are the two spoken user messages after the greeting (turns 2 and 9), never the user's tool call.
"""

from __future__ import annotations

from pathlib import Path

from hostile_text import HOSTILE
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.store.records import LabelRow
from testbed.transcript import Message, ToolCall, ToolResult

RUN = "tool-run"
EPISODE = "tool-episode"
JUDGE = JudgeIdentity("rules", "1")

SYSTEM = "You are a telecom agent. SYSTEM-ONLY-WORDS."
GREETING = "Hello, how can I help you today?"
REQUEST = "My phone shows no signal at all."
LONG_RESULT = '{"customer": "C1", "lines": [' + ", ".join(f'{{"id": {k}, "plan": "unlimited-{k}"}}' for k in range(200)) + "]}"
"""The first tool's result: several thousand characters on one line, what the replay folds."""
LONG_ARGUMENT = "x" * 400
FAILED_RESULT = f"Error: no such tool {HOSTILE}"
ANSWER = "I checked your line: please turn airplane mode off."
USER_RESULT = "Airplane mode is now OFF. RESULT-THE-USER-SAW"
USER_TURN = "I turned airplane mode off, there is still no signal."
CLOSING = "Thanks, I will transfer you to a technician."

ASSISTANT_CALLS = (ToolCall("call-1", "get_customer_by_phone", '{"phone":  "555-0100",\n "note": "' + LONG_ARGUMENT + '"}'),
                   ToolCall("call-2", f"lookup{HOSTILE}", '{"q": "' + HOSTILE + '"'))
"""The second call's name holds the corpus, and its arguments are no valid JSON (they hold it raw)."""
USER_CALL = ToolCall("call-3", "toggle_airplane_mode", "{}")

MESSAGES = [
    Message("system", SYSTEM, "scenario", 0),
    Message("assistant", GREETING, "agent", 1, {"temperature": 0.0}),
    Message("user", REQUEST, "user", 2, {"temperature": 0.0}),
    Message("assistant", "", "agent", 3, {"temperature": 0.0}, tool_calls=ASSISTANT_CALLS),
    Message("tool", LONG_RESULT, "environment", 4, tool_result=ToolResult("call-1", "get_customer_by_phone")),
    Message("tool", FAILED_RESULT, "environment", 5, tool_result=ToolResult("call-2", f"lookup{HOSTILE}", error=True)),
    Message("assistant", ANSWER, "agent", 6, {"temperature": 0.0}),
    Message("user", "", "user", 7, {"temperature": 0.0}, tool_calls=(USER_CALL,)),
    Message("tool", USER_RESULT, "environment", 8, tool_result=ToolResult("call-3", "toggle_airplane_mode", "user")),
    Message("user", USER_TURN, "user", 9, {"temperature": 0.0}),
    Message("assistant", CLOSING, "agent", 10, {"temperature": 0.0}),
]
GENERATED = (2, 9)
"""The generated user turns of `MESSAGES`."""


def build_tool_store(folder: Path, *, labelled: bool = True) -> Path:
    """A store holding run `RUN` with the one episode `EPISODE` (`MESSAGES`); with `labelled`, `JUDGE` calls both
    generated turns genuine follow-ups."""
    path = folder / "tools.sqlite"
    store = Store(path)
    store.begin_run(RUN, scenario="tau2-telecom", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    key = EpisodeKey(EPISODE, "task-1", "tau2-telecom", "agent", "agent-model", "user", "user-model", "instructed", 0.0, 0, "none")
    store.write_episode(RUN, EpisodeOutcome(key, MESSAGES, "done", "user_stop"))
    if labelled:
        write_labels(store, RUN, JUDGE, [LabelRow(EPISODE, t, "scored", "genuine_followup", True, "asks on") for t in GENERATED])
    store.close()
    return path
