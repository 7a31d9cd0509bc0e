"""One transcript, stepped through as it unfolded: turns appear one at a time, or play at a chosen speed.

The cursor is the last turn shown; everything after it is hidden until stepped to. An episode
opens fully shown with the cursor on its last turn; `home` rewinds it to the opening turn.
`[` and `]` move to the previous and next episode of the table's current filter and order.
Tool results are folded to one line each (their length, then the start of their text); `t` unfolds
them all and folds them again. `o` jumps to the drift onset and, on a run whose kind detects user faults, `f` to the next user
turn with a simulated-user fault (from the last one, back to the first).

A long message (or tool result, or human reference) is shown in part (`testbed.long_text`): its first
4,000 characters, a note of what is left out, its last few hundred, so a 10 MB reply opens as fast as a
short one. `x` shows ten times more of every cut message each time it is pressed, up to the whole text (a
megabyte takes seconds to lay out), then cuts them all again; a click on a cut message does the same for it.
"""

from __future__ import annotations

from rich.panel import Panel
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from testbed.long_text import HEAD_CHARS, larger_part, leaves_out
from testbed.replay.catalog import EpisodeRow, RunCatalog
from testbed.replay.episode_view import EpisodeView, TurnView, episode_view
from testbed.replay.render import APP_HINT, episode_header, turn_panel
from testbed.store import JudgeIdentity
from testbed.terminal_text import neutralised
from testbed.transcript import is_tool

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Play speeds in turns per second."""
HEADER_HINT = "testbed show-episode RUN EPISODE --full prints it whole"
"""How the episode header says a long error reason can be read whole."""


class TranscriptScreen(Screen):
    """One episode's messages with their labels, source edges and drift onset."""

    BINDINGS = [
        Binding("right", "step(1)", "next turn", key_display="→", priority=True),
        Binding("left", "step(-1)", "previous turn", key_display="←", show=False, priority=True),
        Binding("space", "play", "play / pause"),
        Binding("plus,equals_sign", "speed(1)", "faster", key_display="+"),
        Binding("minus", "speed(-1)", "slower", key_display="-", show=False),
        Binding("o", "onset", "jump to drift onset"),
        Binding("f", "next_fault", "jump to next user fault"),
        Binding("t", "tools", "unfold / fold tool results"),
        Binding("x", "more", "show more of long messages"),
        Binding("home", "first", "rewind to the opening turn", show=False, priority=True),
        Binding("end", "last", "show every turn", show=False, priority=True),
        Binding("right_square_bracket", "episode(1)", "next episode (filtered)", key_display="]"),
        Binding("left_square_bracket", "episode(-1)", "previous episode (filtered)", key_display="[", show=False),
        Binding("escape", "back", "back to episodes", show=False),
    ]

    DEFAULT_CSS = """
    TranscriptScreen #header { height: auto; padding: 0 1; background: $boost; }
    TranscriptScreen #status { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, catalog: RunCatalog, judge: JudgeIdentity | None, rows: list[EpisodeRow], index: int) -> None:
        super().__init__()
        self.catalog, self.judge, self.rows, self.index = catalog, judge, rows, index
        self.speed = SPEEDS.index(1.0)
        self.timer: Timer | None = None
        self.view: EpisodeView
        self.cursor = 0
        self.marked: int | None = None
        self.unfolded = False
        self.heads: dict[int, int | None] = {}
        """Characters shown of each long text, by turn position, where more than `HEAD_CHARS` are (None: whole)."""

    def compose(self) -> ComposeResult:
        """Header, the scrolling messages, a status line, footer."""
        yield Static(id="header")
        yield VerticalScroll(id="messages")
        yield Static(id="status")
        yield Footer()

    async def on_mount(self) -> None:
        """Show the episode the table was on."""
        await self.load(self.index)

    async def load(self, index: int) -> None:
        """Read and show the episode at `index` of the filtered rows, fully unfolded."""
        self.pause()
        self.index = index
        store = self.app.store  # type: ignore[attr-defined]
        self.view = episode_view(store, self.catalog, self.catalog.episode(self.rows[index].episode_id), self.judge)
        self.heads = {}
        self.query_one("#header", Static).update(episode_header(self.view, hint=HEADER_HINT))
        box = self.query_one("#messages", VerticalScroll)
        await box.remove_children()
        await box.mount_all(Static(self.panel(t, position=i), classes="turn") for i, t in enumerate(self.view.turns))
        self.cursor, self.marked = len(self.view.turns) - 1, None
        self.show()

    def panel(self, turn: TurnView, current: bool = False, *, position: int) -> Panel:
        """One turn's panel, its tool result folded unless the results are unfolded, a long text as much as is asked."""
        return turn_panel(turn, current=current, folded=not self.unfolded, head=self.head(position), hint=APP_HINT)

    def longest_text(self, position: int) -> int:
        """Characters of the longest text the panel at `position` shows in part: its content (unless it is a folded tool
        result) or a human reference under it."""
        turn = self.view.turns[position]
        shown = turn.message.content if not is_tool(turn.message) or self.unfolded else ""
        return max([len(shown), *(len(r.message.content) for r in turn.references)])

    def head(self, position: int) -> int | None:
        """Characters shown of each long text of the turn at `position` (None: whole)."""
        return self.heads.get(position, HEAD_CHARS)

    def action_more(self) -> None:
        """Show more of every cut message (ten times more, up to whole); when none is cut, cut them all again."""
        cut = [i for i in range(len(self.view.turns)) if leaves_out(self.longest_text(i), self.head(i))]
        if not cut and not self.heads:
            self.app.notify("this episode has no message long enough to be cut", severity="information")
            return
        changed = cut or list(self.heads)
        if cut:
            self.heads.update((i, larger_part(self.longest_text(i), self.head(i))) for i in cut)
        else:
            self.heads = {}
        self.redraw(changed)

    def on_click(self, event: events.Click) -> None:
        """A click on a cut message shows more of it."""
        panels = self.panels
        widget = event.widget
        while widget is not None and widget not in panels:
            widget = widget.parent
        if widget is None:
            return
        position = panels.index(widget)
        longest = self.longest_text(position)
        if leaves_out(longest, self.head(position)):
            self.heads[position] = larger_part(longest, self.head(position))
            self.redraw([position])

    def redraw(self, positions: list[int]) -> None:
        """Draw the panels at `positions` again (after what they show has changed)."""
        panels = self.panels
        for i in positions:
            panels[i].update(self.panel(self.view.turns[i], current=i == self.cursor, position=i))

    def action_tools(self) -> None:
        """Unfold every tool result of the episode, or fold them again."""
        self.unfolded = not self.unfolded
        self.redraw([i for i, turn in enumerate(self.view.turns) if is_tool(turn.message)])
        if not any(is_tool(t.message) for t in self.view.turns):
            self.app.notify("this episode has no tool results", severity="information")

    @property
    def panels(self) -> list[Static]:
        """The message widgets, in turn order."""
        return list(self.query_one("#messages", VerticalScroll).query(".turn").results(Static))

    def show(self, scroll: bool = True) -> None:
        """Show turns up to the cursor, mark the cursor, and update the status line (redrawing only what changed)."""
        panels = self.panels
        old = self.marked
        low, high = (0, len(panels) - 1) if old is None else (min(old, self.cursor), max(old, self.cursor))
        for i in range(low, high + 1):
            panels[i].display = i <= self.cursor
        for i in {old, self.cursor} - {None}:
            panels[i].update(self.panel(self.view.turns[i], current=i == self.cursor, position=i))
        self.marked = self.cursor
        if scroll and panels:
            panels[self.cursor].scroll_visible(animate=False)
        self.query_one("#status", Static).update(self.status_text())

    def status_text(self) -> Text:
        """Where the cursor is, play state and speed, and which episode of the filter this is."""
        turn = self.view.turns[self.cursor].message if self.view.turns else None
        text = Text(f"turn {turn.turn_index if turn else '-'} of {len(self.view.turns) - 1}  ·  ")
        text.append("▶ playing" if self.timer else "❚❚ paused", style="bold green" if self.timer else "")
        text.append(f" at {SPEEDS[self.speed]:g} turns/s  ·  episode {self.index + 1} of {len(self.rows)} in the filter")
        return text

    def action_step(self, delta: int) -> None:
        """Move the cursor one turn forward or back."""
        self.cursor = max(0, min(len(self.view.turns) - 1, self.cursor + delta))
        self.show()

    def action_first(self) -> None:
        """Rewind to the opening turn."""
        self.pause()
        self.cursor = 0
        self.show()

    def action_last(self) -> None:
        """Show every turn."""
        self.pause()
        self.cursor = len(self.view.turns) - 1
        self.show()

    def action_onset(self) -> None:
        """Put the cursor on the drift onset (unfolding up to it)."""
        position = self.view.onset_position
        if position is None:
            self.app.notify(neutralised(f"no drift onset under {self.judge or 'any judge'} in this episode"), severity="warning",
                            markup=False)
            return
        self.pause()
        self.cursor = position
        self.show()

    def action_next_fault(self) -> None:
        """Put the cursor on the next user turn with a fault (unfolding up to it), wrapping to the first."""
        positions = self.view.fault_positions
        if not positions:
            why = self.view.fault_problem or ("no user faults in this episode" if self.view.faults_detected
                                              else "this run's kind detects no user faults")
            self.app.notify(neutralised(why), severity="warning", markup=False)
            return
        self.pause()
        self.cursor = next((p for p in positions if p > self.cursor), positions[0])
        self.show()

    def action_play(self) -> None:
        """Play from the cursor (from the start when at the end), or pause."""
        if self.timer is not None:
            self.pause()
            self.show(scroll=False)
            return
        if self.cursor >= len(self.view.turns) - 1:
            self.cursor = 0
        self.timer = self.set_interval(1 / SPEEDS[self.speed], self._tick)
        self.show()

    def _tick(self) -> None:
        if self.cursor >= len(self.view.turns) - 1:
            self.pause()
            self.show(scroll=False)
            return
        self.action_step(1)

    def pause(self) -> None:
        """Stop playing."""
        if self.timer is not None:
            self.timer.stop()
            self.timer = None

    def action_speed(self, delta: int) -> None:
        """Play faster or slower."""
        self.speed = max(0, min(len(SPEEDS) - 1, self.speed + delta))
        if self.timer is not None:
            self.timer.stop()
            self.timer = self.set_interval(1 / SPEEDS[self.speed], self._tick)
        self.show(scroll=False)

    async def action_episode(self, delta: int) -> None:
        """Open the next or previous episode of the filter."""
        index = self.index + delta
        if not 0 <= index < len(self.rows):
            self.app.notify("no more episodes in this filter", severity="warning")
            return
        await self.load(index)

    def action_back(self) -> None:
        """Back to the episode table."""
        self.pause()
        self.app.pop_screen()
