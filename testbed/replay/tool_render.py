"""Tool traffic as the replay and `testbed show-episode` show it: calls as `name(arguments)`, results tied to their call.

A τ² episode interleaves the conversation with tool calls (an assistant's, or in dual-control
tasks a user's) and `tool` messages holding what each call returned. Calls are shown compactly
(JSON re-spaced on one line, long arguments cut with an ellipsis) so a call never fills a screen;
a result can be *folded* to one line that says how long it is, which the app does by default.
Every name, argument and result went through a model or a tool, so it is `neutralised` like
message text, after it is cut, so a cut never hides a mark. An unfolded result that is long is shown in
part (`testbed.long_text`), and a call's arguments or a folded result are read only as far as they are shown,
so a megabyte of tool traffic costs no more to draw than a line.
"""

from __future__ import annotations

import json

from rich.text import Text

from testbed.long_text import HEAD_CHARS, text_in_part
from testbed.tool_arguments import bounded_loads
from testbed.transcript import Message, ToolCall
from testbed.terminal_text import neutralised

NAME_CHARS = 48
"""Longest tool name shown; a longer one is cut with an ellipsis."""
ARGUMENT_CHARS = 120
"""Longest argument text shown in a call line."""
FOLDED_CHARS = 120
"""Longest excerpt of a folded result."""
PARSED_ARGUMENT_CHARS = 64_000
"""Longest arguments re-spaced as JSON; longer ones are only cut (parsing them would cost more than a line shows)."""
CALL_STYLE = "yellow"
RESULT_STYLE = "magenta"
ERROR_STYLE = "bold red"


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else text[:max(0, limit - 1)] + "…"


def compact_arguments(arguments: str) -> str:
    """A call's raw JSON arguments on one line (`{"id": 1, "line": "a"}`); text that is no JSON has its whitespace collapsed
    (as has the start of arguments too long to parse for one line)."""
    if len(arguments) > PARSED_ARGUMENT_CHARS:
        return " ".join(arguments[:4 * ARGUMENT_CHARS].split()) + "…"
    try:
        parsed = bounded_loads(arguments)
    except ValueError:  # not JSON, or nested too deep to parse (testbed.tool_arguments)
        return " ".join(arguments.split())
    return json.dumps(parsed, ensure_ascii=False, separators=(", ", ": "))


def call_line(call: ToolCall) -> str:
    """`name(arguments)`, name and arguments cut to their limits, neutralised."""
    return neutralised(f"{cut(call.name, NAME_CHARS)}({cut(compact_arguments(call.arguments), ARGUMENT_CHARS)})")


def calls_text(message: Message) -> Text:
    """One `→ name(arguments)` line per tool call of a message."""
    text = Text()
    for k, call in enumerate(message.tool_calls):
        text.append("\n" if k else "")
        text.append("→ ", style=f"bold {CALL_STYLE}")
        text.append(call_line(call), style=CALL_STYLE)
    return text


def result_heading(message: Message, call_turn: int | None) -> Text:
    """What a `tool` message answers: `ERROR` first on a failure (so a narrow title keeps it), the tool, the call and
    the turn that made it, and who asked."""
    result = message.tool_result
    text = Text(" · ")
    if result is None:
        return text.append("tool result of no recorded call", style="dim")
    if result.error:
        text.append(" ERROR ", style=f"reverse {ERROR_STYLE}")
        text.append(" ")
    text.append(neutralised(cut(result.name, NAME_CHARS)), style=f"bold {RESULT_STYLE}")
    where = f"turn {call_turn}" if call_turn is not None else "no stored turn"
    text.append(neutralised(f" ← call {cut(result.call_id, 40)} of {where} · asked by {cut(result.requestor, 20)}"))
    return text


def result_body(message: Message, *, folded: bool, head: int | None = HEAD_CHARS, hint: str = "") -> Text:
    """A result's text: unfolded (in part when long, `hint` saying how to see it whole; whole when `head` is None), or
    folded to one line, its length first, then its text with whitespace collapsed and cut."""
    style = ERROR_STYLE if message.tool_result is not None and message.tool_result.error else ""
    if not message.content:
        return Text("(empty result)", style="dim italic")
    if not folded:
        return text_in_part(message.content, hint, head=head, style=style)
    line = Text(f"[{len(message.content)} chars, folded] ", style="dim", no_wrap=True, overflow="ellipsis")
    line.append(neutralised(cut(" ".join(message.content[:4 * FOLDED_CHARS].split()), FOLDED_CHARS)), style=style)
    return line
