"""Rich renderings of an `EpisodeView`: one panel per message, a header with the conditions, the error.

The replay app puts these panels on screen and `testbed show-episode` prints them, so both show
the same badges: the true role, the speaker, turn index, tokens and latency; each identity's label
with its reason; the source edge; the drift onset; a perturbed answer; a user turn's simulated-user faults with
their evidence; an episode's error; tool calls as `name(arguments)` and tool results tied to their
call (`testbed.replay.tool_render`); under a simulated user's first turn on a real conversation, the real
user's turn after the same context (its human reference), dim and italic.
Everything a model, a server or a dataset wrote (messages, reasons, names, ids, fault evidence) is `neutralised`
here, so neither the app nor a pipe ever gets an escape sequence from a transcript. A long message, result,
reference or error is shown in part (`testbed.long_text`): its start, a note of what was left out with `hint`
saying how to see it whole, and its end; `head=None` shows every text whole.
"""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from testbed.replay.episode_view import EpisodeView, TurnView
from testbed.replay.tool_render import RESULT_STYLE, calls_text, result_body, result_heading
from testbed.scenarios.human_reference import WEAK_HUMAN_MODEL
from testbed.store import LabelRecord
from testbed.long_text import HEAD_CHARS, pieces, text_blocks, text_in_part
from testbed.store.references import ReferenceTurn
from testbed.terminal_text import neutralised
from testbed.transcript import is_tool

ROLE_STYLES = {"system": "grey58", "user": "cyan", "assistant": "green", "tool": RESULT_STYLE}
"""The colour of each true role's badge and border."""

ONSET_STYLE = "bold red"
FAULT_STYLE = "bold dark_orange"
"""The colour of a user fault's mark, and of the border of a faulted turn (the drift onset's red wins)."""
REFERENCE_STYLE = "dim italic"
"""The style of a human reference shown under a simulated user's turn: read beside it, never mistaken for it."""
SUMMARY_TURNS = 4
"""How many turns of each fault kind the episode header lists before it gives their number (`f` visits them all)."""
PRINT_HINT = "--full shows it whole"
"""How the print commands say a long text can be seen whole."""
APP_HINT = "x or a click shows more"
"""How the replay app says more of a long text can be seen."""


def role_badge(role: str) -> Text:
    """The role as a reversed badge: ` USER `, ` ASSISTANT `, ` SYSTEM `, ` TOOL `."""
    return Text(neutralised(f" {role.upper()} "), style=f"reverse bold {ROLE_STYLES.get(role, 'white')}")


def label_line(record: LabelRecord) -> Text:
    """`local@v3  echo_assistant  — reason` (or `unscored`, with why)."""
    line = Text(neutralised(f"{record.who}  "), style="dim")
    if record.status == "scored":
        line.append(neutralised(record.label or ("follow-up" if record.followup else "not a follow-up")), style="bold magenta")
    else:
        line.append("unscored", style="yellow")
    if record.reason:
        line.append(neutralised(f"  — {record.reason}"), style="italic")
    return line


def fault_line(kind: str, evidence: str) -> Text:
    """` ⚑ invented_fact  ZX9Y8W`: one simulated-user fault of a turn and what triggered it."""
    line = Text(" ⚑ ", style=f"reverse {FAULT_STYLE}")
    line.append(neutralised(f" {kind}"), style=FAULT_STYLE)
    if evidence:
        line.append(neutralised(f"  {evidence}"))
    return line


def mark_line(mark) -> Text:
    """` ⚑ hallucination · critical_hindered · by user-review@…  (invented_fact) ZX9Y8W`: one detector's mark on a user
    turn, its tags, severity (a reviewer's), the detector, and the rule's fault kind with what triggered it."""
    line = Text(" ⚑ ", style=f"reverse {FAULT_STYLE}")
    line.append(neutralised(f" {', '.join(mark.tags)}"), style=FAULT_STYLE)
    if mark.severity:
        line.append(neutralised(f" · {mark.severity}"), style=f"bold {FAULT_STYLE}")
    line.append(neutralised(f" · by {mark.detector}"), style="dim")
    if mark.what:
        line.append(neutralised(f"  ({mark.what})"))
    if mark.evidence:
        line.append(neutralised(f"  {mark.evidence}"))
    return line


def reference_block(reference: ReferenceTurn, *, head: int | None = HEAD_CHARS, hint: str = PRINT_HINT) -> Text:
    """`human reference (real user): <text>`, or `human reference (answered another message): <text>` when the
    real user answered another message than the simulated user saw (`WEAK_HUMAN_MODEL`); a long one in part."""
    who = "answered another message" if reference.user_model == WEAK_HUMAN_MODEL else "real user"
    block = Text(f"human reference ({who}): ", style=f"bold {REFERENCE_STYLE}")
    if not reference.message.content:
        return block.append("(empty)", style=REFERENCE_STYLE)
    return block.append_text(text_in_part(reference.message.content, hint, head=head, style=REFERENCE_STYLE))


def turn_title(turn: TurnView) -> Text:
    """The panel title: role badge, speaker, turn index, the user turn's ordinal or the call a tool result answers,
    tokens and latency."""
    m = turn.message
    title = role_badge(m.role)
    title.append(neutralised(f" {m.speaker or '-'} · turn {m.turn_index}"))
    if is_tool(m):
        title.append_text(result_heading(m, turn.call_turn))
    elif m.tool_calls:
        title.append(f" · {len(m.tool_calls)} tool call{'s' if len(m.tool_calls) != 1 else ''}")
    if turn.generated:
        title.append(f" · user turn {turn.ordinal}")
    if m.usage.completion_tokens or m.usage.latency_s:
        title.append(f" · {m.usage.completion_tokens} tok · {m.usage.latency_s:.2f} s")
    return title


def _body(turn: TurnView, folded: bool, head: int | None, hint: str) -> list[RenderableType]:
    m = turn.message
    if is_tool(m):
        return [*pieces(result_body(m, folded=folded, head=head, hint=hint))]
    parts: list[RenderableType] = [*text_blocks(m.content, hint, head=head)] if m.content else []
    if m.tool_calls:
        return [*parts, calls_text(m)]
    return parts or [Text("(empty)", style="dim italic")]


def turn_panel(turn: TurnView, *, current: bool = False, folded: bool = False, head: int | None = HEAD_CHARS,
               hint: str = PRINT_HINT) -> Panel:
    """One message as a panel; `current` marks the cursor; `folded` shows a tool result on one line; a text longer
    than `head` allows is shown in part, `hint` saying how to see it whole (every text whole when `head` is None)."""
    parts: list[RenderableType] = []
    marks = Text()
    if turn.onset:
        marks.append(" ◆ DRIFT ONSET ", style=f"reverse {ONSET_STYLE}")
    if turn.perturbed:
        marks.append(neutralised(f" perturbed: {turn.perturbed} "), style="reverse yellow")
        marks.append("  (shown to the user as below)", style="dim")
    if turn.source is not None:
        marks.append(f"  ↩ {turn.source}", style="bold yellow" if turn.source.kind == "echoes" else "yellow")
    if marks:
        parts.append(marks)
    if turn.marks:
        parts.extend(mark_line(mark) for mark in turn.marks)
    else:
        parts.extend(fault_line(f.kind, f.evidence) for f in turn.faults)
    parts.extend(_body(turn, folded, head, hint))
    if turn.generated:
        if turn.labels:
            parts.extend(label_line(r) for r in turn.labels)
        else:
            parts.append(Text("not labelled", style="dim"))
    if turn.references:
        parts.append(Rule(style="dim"))
        parts.extend(reference_block(r, head=head, hint=hint) for r in turn.references)
    border = ONSET_STYLE if turn.onset else FAULT_STYLE if turn.faults or turn.marks else ROLE_STYLES.get(turn.message.role, "white")
    return Panel(Group(*parts), title=turn_title(turn), title_align="left", border_style=border,
                 subtitle="▶ here" if current else None, subtitle_align="right")


def episode_header(view: EpisodeView, *, hint: str = PRINT_HINT) -> Text:
    """The episode's conditions, how it stopped, its drift onset under the chosen judge and its error (a long one in
    part: `print_episode` prints it whole below the transcript)."""
    k = view.episode.key
    text = Text(neutralised(f"{view.run_id} / {k.episode_id}"), style="bold")
    text.append(neutralised(f"\nitem {k.item_id} · {k.dataset} · assistant {k.assistant_model} · user {k.user_model} "
                            f"({k.user_mode}) · T={k.temperature:g} · sample {k.sample_index} · "
                            f"perturbation {k.perturbation}"))
    text.append(neutralised(f"\n{view.episode.status}"), style="red" if view.episode.status == "error" else "green")
    text.append(neutralised(f" · stop: {view.episode.termination or '-'}"))
    onset = view.onset_position
    judge = neutralised(str(view.judge)) if view.judge else "no judge"
    text.append(f" · drift ({judge}): " + (f"onset at user turn {view.turns[onset].ordinal} (turn {view.turns[onset].message.turn_index})"
                                           if onset is not None else "none"))
    if view.faults_detected:
        text.append_text(_faults_summary(view))
    if view.episode.error_reason:
        text.append("\nerror: ", style="bold red")
        text.append_text(text_in_part(view.episode.error_reason, hint, style="bold red"))
    return text


def _faults_summary(view: EpisodeView) -> Text:
    """` · user faults: invented on turn 2; drift on turns 4, 6 …` by kind in order of first turn (or none, or why
    they could not be read)."""
    if view.fault_problem:
        return Text(neutralised(f" · {view.fault_problem}"), style="dim")
    by_kind: dict[str, list[int]] = {}
    for t in view.turns:
        for f in t.faults:
            by_kind.setdefault(f.kind, []).append(t.message.turn_index)
    if not by_kind:
        return Text(" · user faults: none")
    parts = []
    for kind, turns in by_kind.items():
        listed = ", ".join(map(str, turns[:SUMMARY_TURNS])) + (f" … ({len(turns)} turns)" if len(turns) > SUMMARY_TURNS else "")
        parts.append(f"{view.fault_names.get(kind, kind)} on turn{'s' if len(turns) > 1 else ''} {listed}")
    text = Text(" · user faults: ")
    text.append(neutralised("; ".join(parts)), style=FAULT_STYLE)
    return text


def print_episode(view: EpisodeView, console: Console, *, full: bool = False) -> None:
    """Print a whole episode: header, then every message as a panel; a long text in part unless `full`."""
    head = None if full else HEAD_CHARS
    console.print(episode_header(view))
    for turn in view.turns:
        console.print(turn_panel(turn, head=head))
    if view.episode.error_reason:
        console.print(Panel(Group(*text_blocks(view.episode.error_reason, PRINT_HINT, head=head)),
                            title=Text(" ERROR ", style="reverse bold red"), title_align="left", border_style="red"))
