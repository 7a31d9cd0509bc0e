"""Labelling mode: one user turn at a time, blind to the judges, keys 1–8 for the eight labels.

The turn is shown as the user-turn generator saw its context: the request (the episode's first
user message), the conversation since then (`TurnRecord.context`: what the judges read, tool traffic
only marked), the latest answer before the turn, and the turn itself. The judges' labels of a
turn appear only after the person has labelled it, in the line about the turn just labelled.
Every label is committed when its key is pressed (`testbed.replay.labelling`). The turns, ids and
notes are `neutralised` before they are shown.
"""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from testbed.judges.taxonomy import taxonomy
from testbed.long_text import HEAD_CHARS, larger_part, leaves_out, text_blocks
from testbed.replay.catalog import RunCatalog
from testbed.replay.labelling import LabellingSession
from testbed.replay.render import APP_HINT, label_line, role_badge
from testbed.store import JudgeIdentity, TurnRecord
from testbed.terminal_text import neutralised
from testbed.transcript import ASSISTANT, USER

LABEL_KEYS = tuple(str(k) for k in range(1, 9))


def earlier_panels(turn: TurnRecord, head: int) -> list:
    """The conversation between the request and the answer, one dim panel per message (a tool note as a dim line)."""
    out: list = []
    for entry in turn.context:
        if entry.role not in (USER, ASSISTANT):
            out.append(Text(neutralised(entry.text), style="dim italic"))
            continue
        out.append(Panel(Group(*text_blocks(entry.text, APP_HINT, head=head)), title=role_badge(entry.role) + Text(" earlier"),
                         title_align="left", border_style="dim"))
    return out


SHORT_DEFINITION = 90
"""Characters of a definition the one-line legend keeps, so eight labels fit eight lines of a 120-column terminal."""


def _short(definition: str) -> str:
    return definition if len(definition) <= SHORT_DEFINITION else definition[:SHORT_DEFINITION].rsplit(" ", 1)[0] + " …"


def legend(full: bool = False) -> Text:
    """The eight labels with their keys and definitions from `judges/labels.yaml`: cut to a line each, or whole when `full`."""
    t = taxonomy()
    text = Text()
    for key, name in zip(LABEL_KEYS, t.labels):
        text.append(f" {key} ", style="reverse bold")
        text.append(f" {name:<17}", style="bold")
        text.append(f" {t.definitions[name] if full else _short(t.definitions[name])}\n", style="dim")
    text.rstrip()
    return text


class LabelScreen(Screen):
    """One person labels a run's user turns in a seeded, condition-stratified order."""

    BINDINGS = [
        *(Binding(k, f"label({i})", name, show=False) for i, (k, name) in enumerate(zip(LABEL_KEYS, taxonomy().labels))),
        Binding("1-8", "noop", "label the turn (see the legend)", show=False),
        Binding("u", "undo", "undo the last label"),
        Binding("k", "skip", "skip this turn"),
        Binding("n", "note", "add a note to this turn's label"),
        Binding("l", "legend", "whole label definitions / one line each"),
        Binding("x", "more", "show more of long texts"),
        Binding("escape", "back", "close the note, or leave"),
    ]

    DEFAULT_CSS = """
    LabelScreen #progress { height: auto; padding: 0 1; background: $boost; }
    LabelScreen #turn { height: 1fr; }
    LabelScreen #target { height: auto; max-height: 14; }
    LabelScreen #legend { height: auto; padding: 0 1; border-top: solid $accent; }
    LabelScreen #last { height: auto; padding: 0 1; }
    LabelScreen #note { display: none; }
    LabelScreen #note.open { display: block; }
    """

    def __init__(self, run_id: str, annotator: str, seed: int, doubt_of: JudgeIdentity | None = None,
                 only: frozenset[tuple[str, int]] | None = None) -> None:
        super().__init__()
        self.run_id, self.annotator, self.seed, self.doubt_of, self.only = run_id, annotator, seed, doubt_of, only
        self.position: int | None = None
        self.skipped: set[int] = set()
        self.note = ""
        self.full_legend = False
        self.head: int | None = HEAD_CHARS
        """Characters shown of each long text of the turn on screen (None: whole); back to `HEAD_CHARS` on every turn."""
        self.shown_position: int | None = None

    def compose(self) -> ComposeResult:
        """Progress, the context (scrolls), the turn to label (always in view), the last labelled turn, the note line, the legend."""
        yield Static(id="progress")
        with VerticalScroll(id="turn"):
            yield Static(id="context")
        with VerticalScroll(id="target"):
            yield Static(id="user-turn")
        yield Static(id="last")
        yield Input(placeholder="note for this turn (Enter keeps it, Esc drops it)", id="note")
        yield Static(legend(), id="legend")
        yield Footer()

    def on_mount(self) -> None:
        """Order the turns and show the first one not yet labelled."""
        store = self.app.store  # type: ignore[attr-defined]
        self.session = LabellingSession.open(store, RunCatalog.load(store, self.run_id), self.annotator, self.seed,
                                              doubt_of=self.doubt_of, only=self.only)
        self.position = self.session.next_position()
        self.redraw()

    @property
    def turn(self) -> TurnRecord | None:
        """The turn on screen, or None when every turn is labelled."""
        return None if self.position is None else self.session.order[self.position]

    def redraw(self) -> None:
        """Show progress and the current turn (or that all are done)."""
        s = self.session
        progress = Text(neutralised(f"labelling {self.run_id} as human:{self.annotator}  ·  "), style="bold")
        progress.append(f"{s.done} of {s.total} labelled", style="bold green")
        progress.append(f"  ·  seed {self.seed}  ·  skipped {len(self.skipped)}  ·  judges hidden", style="dim")
        self.query_one("#progress", Static).update(progress)
        context, target = self.query_one("#context", Static), self.query_one("#user-turn", Static)
        turn = self.turn
        if self.position != self.shown_position:
            self.head, self.shown_position = HEAD_CHARS, self.position
        if turn is None:
            context.update(Text("Every turn of this run has your label. u undoes the last one; q quits.", style="bold green"))
            target.update("")
            return
        note = Text(neutralised(f"note: {self.note}"), style="italic yellow") if self.note else Text("")
        context.update(Group(
            Panel(Group(*text_blocks(turn.question, APP_HINT, head=self.head)), title=role_badge("user") + Text(
                " the request"), title_align="left", border_style="cyan"),
            *earlier_panels(turn, self.head),
            Panel(Group(*text_blocks(turn.answer, APP_HINT, head=self.head)), title=role_badge("assistant") + Text(
                " the answer the user saw"), title_align="left", border_style="green"),
        ))
        shown = text_blocks(turn.user_turn, APP_HINT, head=self.head) if turn.user_turn else [Text("(empty)")]
        target.update(Panel(Group(*shown, note), title=role_badge("user") + Text(
            neutralised(f" the user turn to label · episode {turn.episode_id[:12]} · turn {turn.turn_index}")),
            title_align="left", border_style="bold cyan"))
        self.query_one("#turn", VerticalScroll).scroll_home(animate=False)
        self.query_one("#target", VerticalScroll).scroll_home(animate=False)

    def reveal(self, turn: TurnRecord) -> None:
        """After a label: the person's label and, now, every judge's on the turn just labelled."""
        label, _ = self.session.label_of(turn) or ("", "")
        text = Text(neutralised(f"turn {turn.episode_id[:12]}:{turn.turn_index}  you: "), style="dim")
        text.append(neutralised(label), style="bold cyan")
        for record in self.session.catalog.records(turn.episode_id, turn.turn_index):
            if record.who != self.session.who:
                text.append("\n   ")
                text.append_text(label_line(record))
        self.query_one("#last", Static).update(text)

    def action_label(self, index: int) -> None:
        """Store the label with this key on the current turn, then go to the next unlabelled turn."""
        turn = self.turn
        if turn is None:
            return
        self.session.label(turn, taxonomy().labels[index], self.note)
        self.note = ""
        self.reveal(turn)
        self.position = self.session.next_position(self.position, frozenset(self.skipped))
        self.redraw()

    def action_undo(self) -> None:
        """Withdraw the last label given here and go back to its turn."""
        key = self.session.undo()
        if key is None:
            self.app.notify("nothing to undo in this session", severity="warning")
            return
        self.position = next(i for i, t in enumerate(self.session.order) if (t.episode_id, t.turn_index) == key)
        self.skipped.discard(self.position)
        withdrawn = neutralised(f"withdrew your label on {key[0][:12]}:{key[1]}")
        self.query_one("#last", Static).update(Text(withdrawn, style="yellow"))
        self.redraw()

    def action_skip(self) -> None:
        """Leave this turn unlabelled for now (it is offered again next time)."""
        if self.position is None:
            return
        self.skipped.add(self.position)
        following = self.session.next_position(self.position, frozenset(self.skipped))
        if following is None:
            self.app.notify("every other turn is labelled or skipped", severity="warning")
            self.skipped.discard(self.position)
            return
        self.position, self.note = following, ""
        self.redraw()

    def action_note(self) -> None:
        """Open the note line; the note is stored with the label given next."""
        box = self.query_one("#note", Input)
        box.add_class("open")
        box.value = self.note
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Keep the note for the next label."""
        self.note = event.value.strip()
        self._close_note()
        self.redraw()

    def _close_note(self) -> None:
        self.query_one("#note", Input).remove_class("open")
        self.set_focus(None)

    def action_back(self) -> None:
        """Close the note line, or leave labelling (everything given is already stored)."""
        if self.query_one("#note", Input).has_class("open"):
            self._close_note()
        elif len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit()

    def action_legend(self) -> None:
        """Show the labels' whole definitions, or one line each."""
        self.full_legend = not self.full_legend
        self.query_one("#legend", Static).update(legend(self.full_legend))

    def longest(self) -> int:
        """Characters of the longest text of the turn on screen (0 when none is)."""
        turn = self.turn
        return max(len(turn.question), len(turn.answer), len(turn.user_turn or "")) if turn is not None else 0

    def cut(self) -> bool:
        """Whether a text of the turn on screen is left out in part."""
        return leaves_out(self.longest(), self.head)

    def action_more(self) -> None:
        """Show ten times more of the turn's long texts (up to whole); when none is cut, cut them again."""
        if self.cut():
            self.head = larger_part(self.longest(), self.head)
        elif self.head != HEAD_CHARS:
            self.head = HEAD_CHARS
        else:
            self.app.notify("this turn has no text long enough to be cut", severity="information")
            return
        self.redraw()

    def on_click(self, event: events.Click) -> None:
        """A click on the request, the answer or the turn shows more of them when they are cut."""
        if self.cut() and event.widget is not None and event.widget.id in ("context", "user-turn"):
            self.action_more()

    def action_noop(self) -> None:
        """Stands for the 1–8 keys in the help screen."""
