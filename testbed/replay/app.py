"""`testbed replay`: a textual app to browse a store's runs, replay their transcripts and label user turns.

Screens stack: runs → episodes of a run → one transcript, or the labelling screen when a person
labels. Every screen lists its keys on `?`. The store is opened read-only to browse and writable
only to label; each label is committed as it is given. What the screens show of the store (ids,
names, transcripts, reasons) is `neutralised` where they build it, never read as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Static

from testbed.store import JudgeIdentity, Store
from testbed.terminal_text import neutralised

HELP_BINDINGS = [Binding("question_mark", "help", "help: every key", key_display="?"), Binding("q", "quit", "quit")]


def binding_rows(screen: Screen) -> list[tuple[str, str]]:
    """(keys, what they do) for every binding of a screen and of the app, in the order they are declared."""
    rows = []
    for binding in [*type(screen).BINDINGS, *ReplayApp.BINDINGS]:
        if isinstance(binding, Binding):
            rows.append((binding.key_display or binding.key, binding.description or binding.action))
    return rows


class HelpScreen(ModalScreen[None]):
    """Every key of the screen below, with what it does, and the screen's notes (what its filter line can say);
    any key closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: 72; height: auto; max-height: 90%; border: round $accent; padding: 1 2; background: $surface; }
    """

    def __init__(self, title: str, rows: list[tuple[str, str]], notes: str = "") -> None:
        super().__init__()
        self.title_text, self.rows, self.notes = title, rows, notes

    def compose(self) -> ComposeResult:
        """The key table."""
        text = Text(f"{self.title_text}: keys\n\n", style="bold")
        for keys, what in self.rows:
            text.append(f"{keys:>14}  ", style="bold cyan")
            text.append(f"{what}\n")
        if self.notes:
            text.append(f"\n{self.notes}\n")
        text.append("\nany key closes this help", style="dim")
        yield Static(text)

    def on_key(self) -> None:
        """Close on any key."""
        self.dismiss()


class RunsScreen(Screen):
    """Every run in the store, newest first; Enter opens one."""

    BINDINGS = [Binding("enter", "open", "open run", show=True)]

    def compose(self) -> ComposeResult:
        """The runs table."""
        yield Static(id="title")
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Fill the table from the store."""
        app: ReplayApp = self.app  # type: ignore[assignment]
        runs = app.store.runs()
        self.query_one("#title", Static).update(Text(neutralised(f"{app.store.path} — {len(runs)} runs"), style="bold"))
        table = self.query_one("#runs", DataTable)
        table.add_columns("run", "scenario", "kind", "framework", "status", "episodes", "errors", "started")
        for r in runs:
            status = Text(neutralised(r["status"]), style={"done": "green", "running": "yellow"}.get(r["status"], "red"))
            episodes = f"{r['done'] + r['errors']}/{r['planned_episodes']}" if r["planned_episodes"] else str(r["done"] + r["errors"])
            names = (r["run_id"], r["scenario"], r["kind"], app.store.framework_of(r["run_id"]))
            errors = Text(str(r["errors"]), style="red" if r["errors"] else "")
            table.add_row(*(Text(neutralised(str(v))) for v in names), status, Text(episodes), errors,
                          Text(neutralised((r["started_at"] or "")[:19])), key=r["run_id"])
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Open the selected run."""
        self.app.open_run(event.row_key.value)  # type: ignore[attr-defined]

    def action_open(self) -> None:
        """Open the run under the cursor."""
        table = self.query_one("#runs", DataTable)
        if table.row_count:
            self.app.open_run(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)  # type: ignore[attr-defined]


class ReplayApp(App):
    """Browse runs, replay transcripts, and (with `annotator`) label user turns blind to the judges."""

    TITLE = "usersim testbed replay"
    BINDINGS = HELP_BINDINGS

    def __init__(self, store: Store, run_id: str | None = None, episode_id: str | None = None, *,
                 annotator: str | None = None, seed: int = 0, judge: JudgeIdentity | None = None,
                 doubt_of: JudgeIdentity | None = None, only: frozenset[tuple[str, int]] | None = None) -> None:
        super().__init__()
        self.store, self.start_run, self.start_episode = store, run_id, episode_id
        self.annotator, self.seed, self.judge, self.doubt_of, self.only = annotator, seed, judge, doubt_of, only

    def on_mount(self) -> None:
        """Open on the runs list, or straight on a run, an episode or the labelling screen."""
        self.push_screen(RunsScreen())
        if self.start_run is None:
            return
        if self.annotator is not None:
            self.open_labelling(self.start_run)
            return
        self.open_run(self.start_run, self.start_episode)

    def open_run(self, run_id: str, episode_id: str | None = None) -> None:
        """Push the episodes screen of a run (and, given `episode_id`, that episode's transcript on top)."""
        from testbed.replay.episodes_screen import EpisodesScreen

        self.push_screen(EpisodesScreen(run_id, judge=self.judge, episode_id=episode_id))

    def open_labelling(self, run_id: str) -> None:
        """Push the labelling screen of a run for the annotator."""
        from testbed.replay.label_screen import LabelScreen

        assert self.annotator is not None
        self.push_screen(LabelScreen(run_id, self.annotator, self.seed, self.doubt_of, self.only))

    def action_help(self) -> None:
        """Show the keys of the current screen."""
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(type(self.screen).__name__.removesuffix("Screen"), binding_rows(self.screen),
                                    getattr(self.screen, "HELP_NOTES", "")))
