"""The episode table of one run: conditions, how each episode ended, drift onset and top label; filter and sort.

The table of a run whose kind detects simulated-user faults (τ²'s) also has a `faults` column: each episode's
faults by their short names (`premature, invented`); `fault=KIND` and `faulted` filter on them, and `f` cycles the
`faulted` flag. They are read in a background thread, on a store connection of its own, because a run whose faults
were not stored has them detected now (seconds): the table is usable at once and fills the column when they arrive.

Filtering and sorting work on the whole run in memory; the table holds only the rows scrolled to so
far, a page at a time, so that every keypress on a run of 10,000 episodes stays quick.

Conditions that are the same for every episode of the run are shown once in the header rather than
as columns (`c` shows them all), so a wide run still fits a 120-column terminal.

Every cell is `Text`, never a string the table would read as markup, and what a model, a server or a
dataset wrote (ids, model names, error reasons) is `neutralised` before it is shown.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from testbed.replay.catalog import EpisodeRow, RunCatalog, run_faults
from testbed.replay.filters import EpisodeFilter, FilterError, SortState, filter_help
from testbed.store import JudgeIdentity, Store
from testbed.store.browse import episodes_containing
from testbed.store.labels import default_identity
from testbed.terminal_text import neutralised

COLUMNS = [
    ("episode", "episode_id"), ("item", "item_id"), ("assistant", "assistant_model"), ("user", "user_model"),
    ("dataset", "dataset"), ("mode", "user_mode"), ("T", "temperature"), ("perturbation", "perturbation"),
    ("framework", "framework"), ("status", "status"), ("stop", "termination"), ("turns", "user_turns"),
    ("onset", "onset"), ("top label", "top_label"), ("faults", "faults"), ("error", "error"),
]
"""(heading, EpisodeRow attribute) of every column, in order."""

CONDITION_COLUMNS = frozenset({"assistant_model", "user_model", "dataset", "user_mode", "temperature", "perturbation", "framework"})
"""Columns folded into the header when every episode has the same value."""
FAULT_COLUMNS = frozenset({"faults"})
"""Columns shown only for a run whose kind detects simulated-user faults."""

PAGE = 200
"""Rows put in the table at a time: a filter or sort over 10,000 episodes redraws one page, not all of them."""
LOAD_AHEAD = 40

DRIFT_CYCLE = ("", "drifted", "!drifted")
ERROR_CYCLE = ("", "errored", "!errored")
FAULT_CYCLE = ("", "faulted", "!faulted")


def cell(row: EpisodeRow, attr: str) -> Text:
    """One cell of the table, styled: errors red, drift onsets red, ids shortened."""
    value = getattr(row, attr)
    if attr == "episode_id":
        return Text(neutralised(value[:12]))
    if attr == "status":
        return Text(neutralised(value), style="red" if value == "error" else "green")
    if attr == "onset":
        return Text(f"{value} (t{row.onset_turn})", style="bold red") if value is not None else Text("-", style="dim")
    if attr == "error":
        return Text(neutralised(value[:40]), style="red")
    if attr == "temperature":
        return Text(f"{value:g}")
    if attr == "faults":
        return Text(neutralised(row.fault_names), style="bold dark_orange") if value else Text("-", style="dim")
    return Text(neutralised(str(value)))


class EpisodesScreen(Screen):
    """One run's episodes as a table; Enter replays one."""

    @property
    def HELP_NOTES(self) -> str:  # noqa: N802 - the name the app's help screen reads off every screen
        """What the help screen adds under the keys: what a filter line can say, with the fault kinds of this run's kind."""
        return f"filter (/):\n{filter_help(self.catalog.fault_names)}"

    BINDINGS = [
        Binding("enter", "open", "replay episode", show=False),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("d", "cycle_drifted", "drifted: all / yes / no"),
        Binding("e", "cycle_errored", "errored: all / yes / no"),
        Binding("f", "cycle_faulted", "user faults: all / yes / no"),
        Binding("j", "next_judge", "next judge"),
        Binding("s", "next_sort", "sort by next column"),
        Binding("S", "reverse_sort", "reverse sort", show=False),
        Binding("c", "toggle_constant", "show/hide constant columns", show=False),
        Binding("x", "clear_filter", "clear filter", show=False),
        Binding("escape", "back", "back to runs", show=False),
    ]

    DEFAULT_CSS = """
    EpisodesScreen #header { height: auto; padding: 0 1; background: $boost; }
    EpisodesScreen #filter { display: none; }
    EpisodesScreen #filter.open { display: block; }
    """

    def __init__(self, run_id: str, *, judge: JudgeIdentity | None = None, episode_id: str | None = None) -> None:
        super().__init__()
        self.run_id, self.requested_judge, self.pending_episode = run_id, judge, episode_id
        self.filter, self.sort, self.show_constant = EpisodeFilter(), SortState(), False
        self.shown: list[EpisodeRow] = []
        self.loaded = 0

    def compose(self) -> ComposeResult:
        """Header, filter line, table, footer."""
        yield Static(id="header")
        yield Input(placeholder="filter: model=… t=0.7 label=echo fault=invented drifted faulted !errored free text   "
                                "(Enter applies, Esc closes, ? lists fields)", id="filter")
        yield DataTable(id="episodes", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Read the run once and show its table; open a requested episode on top."""
        app = self.app
        self.catalog = RunCatalog.load(app.store, self.run_id, read_faults=False)  # type: ignore[attr-defined]
        self.judge = self.requested_judge or default_identity(app.store, self.run_id)  # type: ignore[attr-defined]
        self.rows = self.catalog.rows(self.judge)
        self.constant = self._constant_columns()
        self.refresh_table()
        self.query_one("#episodes", DataTable).focus()
        if self.catalog.faults_detected:
            self.run_worker(self._read_faults, name="user faults", group="faults", thread=True, exclusive=True)
        if self.pending_episode is not None:
            self.open_episode_id(self.pending_episode)

    def _read_faults(self) -> None:
        """Read the run's user faults on a connection of this thread's own, then hand them to the screen."""
        try:
            store = Store(self.app.store.path, readonly=True)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - the table stays usable without faults
            found = ({}, f"user faults could not be read: {type(exc).__name__}: {exc}")
        else:
            try:
                found = run_faults(store, self.run_id)
            finally:
                store.close()
        self.app.call_from_thread(self.show_faults, *found)

    def show_faults(self, faults: dict, problem: str) -> None:
        """Put the user faults read in the background into the rows, the table and the header, the cursor kept."""
        self.catalog.set_faults(faults, problem)
        if not self.is_attached:
            return
        table = self.query_one("#episodes", DataTable)
        at = self.shown[table.cursor_row].episode_id if self.shown and table.row_count else None
        self.rows = self.catalog.rows(self.judge)
        self.refresh_table()
        keep = next((i for i, r in enumerate(self.shown[:self.loaded]) if r.episode_id == at), None)
        if keep is not None:
            table.move_cursor(row=keep)

    def _constant_columns(self) -> dict[str, str]:
        out = {}
        for _, attr in COLUMNS:
            values = {getattr(r, attr) for r in self.rows}
            if attr in CONDITION_COLUMNS and len(values) == 1:
                out[attr] = str(cell(self.rows[0], attr))
        return out

    def visible_columns(self) -> list[tuple[str, str]]:
        """The columns the table shows now."""
        return [(h, a) for h, a in COLUMNS if (self.show_constant or a not in self.constant)
                and (self.catalog.faults_detected or a not in FAULT_COLUMNS)]

    def refresh_table(self) -> None:
        """Apply the filter and sort, and redraw the table and header."""
        store = self.app.store  # type: ignore[attr-defined]
        shown = self.filter.apply(self.rows, lambda word: episodes_containing(store, self.run_id, word))
        self.shown = self.sort.apply(shown)
        table = self.query_one("#episodes", DataTable)
        table.clear(columns=True)
        columns = self.visible_columns()
        for heading, attr in columns:
            arrow = (" ↓" if self.sort.reverse else " ↑") if attr == self.sort.column else ""
            table.add_column(heading + arrow, key=attr)
        self.loaded = 0
        self.load_more()
        self.query_one("#header", Static).update(self.header_text())

    def load_more(self) -> None:
        """Add the next page of the filtered rows to the table (rows are added as the cursor nears the end)."""
        table = self.query_one("#episodes", DataTable)
        columns = self.visible_columns()
        for row in self.shown[self.loaded:self.loaded + PAGE]:
            table.add_row(*(cell(row, a) for _, a in columns), key=row.episode_id)
        self.loaded = min(len(self.shown), self.loaded + PAGE)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Load the next page when the cursor comes within a screen of the last loaded row."""
        if self.loaded < len(self.shown) and event.cursor_row >= self.loaded - LOAD_AHEAD:
            self.load_more()

    def header_text(self) -> Text:
        """Run, judge, filter, counts and the constant conditions."""
        drifted = sum(r.drifted for r in self.rows)
        errored = sum(r.errored for r in self.rows)
        text = Text(neutralised(self.run_id), style="bold")
        text.append(f"  ·  {len(self.shown)} of {len(self.rows)} episodes  ·  drifted {drifted}  ·  errored {errored}")
        if self.catalog.faults_detected and not self.catalog.fault_problem:
            text.append(f"  ·  user faults {sum(r.faulted for r in self.rows)}")
        text.append(neutralised(f"\njudge: {self.judge or 'none (run testbed judge)'}"), style="magenta")
        if len(self.catalog.identities) > 1:
            text.append(f"  (j: {len(self.catalog.identities)} labellers)", style="dim")
        if self.filter.text:
            text.append(neutralised(f"   filter: {self.filter.text}"), style="bold yellow")
        if self.sort.column:
            text.append(f"   sorted by {self.sort.column}{' desc' if self.sort.reverse else ''}", style="cyan")
        if self.catalog.fault_problem:
            text.append(neutralised(f"\n{self.catalog.fault_problem}"), style="yellow")
        if self.constant and not self.show_constant:
            text.append("\n" + " · ".join(f"{a.replace('_', ' ')} {v}" for a, v in self.constant.items()), style="dim")
        return text

    def set_filter(self, line: str) -> bool:
        """Apply a filter line; a line that cannot be read is reported and the old filter stays."""
        try:
            self.filter = EpisodeFilter.parse(line)
        except FilterError as exc:
            self.app.notify(neutralised(str(exc)), title="filter", severity="error", timeout=6, markup=False)
            return False
        self.refresh_table()
        return True

    def _toggle_term(self, cycle: tuple[str, ...]) -> None:
        words = self.filter.text.split()
        current = next((w for w in words if w in cycle[1:]), "")
        following = cycle[(cycle.index(current) + 1) % len(cycle)]
        kept = [w for w in words if w not in cycle[1:]]
        self.set_filter(" ".join(kept + ([following] if following else [])))

    def action_cycle_drifted(self) -> None:
        """All episodes → drifted only → not drifted only."""
        self._toggle_term(DRIFT_CYCLE)

    def action_cycle_errored(self) -> None:
        """All episodes → errored only → finished only."""
        self._toggle_term(ERROR_CYCLE)

    def action_cycle_faulted(self) -> None:
        """All episodes → with a user fault only → without one only (runs whose kind detects user faults)."""
        if not self.catalog.faults_detected:
            self.app.notify("this run's kind detects no user faults", severity="warning")
            return
        self._toggle_term(FAULT_CYCLE)

    def action_clear_filter(self) -> None:
        """Show every episode again."""
        self.set_filter("")

    def action_filter(self) -> None:
        """Open the filter line."""
        box = self.query_one("#filter", Input)
        box.add_class("open")
        box.value = self.filter.text
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Apply the typed filter and go back to the table."""
        if self.set_filter(event.value):
            self._close_filter()

    def _close_filter(self) -> None:
        self.query_one("#filter", Input).remove_class("open")
        self.query_one("#episodes", DataTable).focus()

    def action_back(self) -> None:
        """Close the filter line, or go back to the runs."""
        if self.query_one("#filter", Input).has_class("open"):
            self._close_filter()
        else:
            self.app.pop_screen()

    def action_next_judge(self) -> None:
        """Show drift and top labels under the next labeller of the run."""
        ids = self.catalog.identities
        if not ids:
            self.app.notify("no labels on this run yet: run `testbed judge`", severity="warning")
            return
        self.judge = ids[(ids.index(self.judge) + 1) % len(ids)] if self.judge in ids else ids[0]
        self.rows = self.catalog.rows(self.judge)
        self.refresh_table()

    def action_next_sort(self) -> None:
        """Sort by the next visible column."""
        attrs = [a for _, a in self.visible_columns()]
        following = attrs[(attrs.index(self.sort.column) + 1) % len(attrs)] if self.sort.column in attrs else attrs[0]
        self.sort.column, self.sort.reverse = following, False
        self.refresh_table()

    def action_reverse_sort(self) -> None:
        """Reverse the order of the sorted column."""
        if self.sort.column is None:
            self.sort.column = "episode_id"
        self.sort.reverse = not self.sort.reverse
        self.refresh_table()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a heading sorts by it (again: reversed)."""
        self.sort.toggle(event.column_key.value)
        self.refresh_table()

    def action_toggle_constant(self) -> None:
        """Show or hide the columns whose value is the same for every episode."""
        self.show_constant = not self.show_constant
        self.refresh_table()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Replay the selected episode."""
        self.open_episode_id(event.row_key.value)

    def action_open(self) -> None:
        """Replay the episode under the cursor."""
        table = self.query_one("#episodes", DataTable)
        if table.row_count:
            self.open_episode_id(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def open_episode_id(self, episode_id: str) -> None:
        """Replay an episode (a unique prefix of its id is enough), stepping within the current filter."""
        from testbed.replay.transcript_screen import TranscriptScreen

        ids = [r.episode_id for r in self.shown]
        matches = [i for i, e in enumerate(ids) if e.startswith(episode_id)]
        if len(matches) != 1:
            what = "is ambiguous" if matches else "is not shown"
            self.app.notify(neutralised(f"episode {episode_id!r} {what} in run {self.run_id}"), severity="error", markup=False)
            return
        self.app.push_screen(TranscriptScreen(self.catalog, self.judge, self.shown, matches[0]))
