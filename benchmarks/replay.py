"""How fast the terminal replay app (`testbed replay`) is on a big store: time to first screen and per keypress.

The store holds one dialogue run of `--episodes` episodes (default 10,000) of 10 messages each
(100,000 messages; the 2 % errored episodes stop after 8 messages and as many finished ones run to
12, so the total stays exact), written through the store's API with deterministic made-up texts,
and labels from two judges on every generated user turn of the finished episodes (about 20 %
drift labels). It is cached at `--store` and reused while its counts match.

Headless, with textual's Pilot at 120x40, it times: constructing `ReplayApp` until the runs table
is filled (`testbed replay`); until the episode table of the run is filled, opened straight
(`testbed replay RUN`) and by Enter on the runs screen; then every key `--repeats` times as
`press(key)` + `pause()`: cursor moves, the errored and drifted filters, sort, judge, a free-text
filter (a word in about 1 % of transcripts), opening a transcript and stepping in it, the next
episode, back; and the labelling screen (`--label`) on a copy of the store. The Pilot's own waits
(three idle checks of at least 20 ms each per key) put a floor under every keypress: the `floor`
row is an unbound key timed the same way, and the CPU column is the process time a key used.
With `--tmux` it also starts the real command in a 120x40 tmux pane and reports the wall time from
launch (Python start-up and imports included) until the screen shows the table.

    .venv/bin/python benchmarks/replay.py
    .venv/bin/python benchmarks/replay.py --episodes 200 --repeats 2
    .venv/bin/python benchmarks/replay.py --tmux --rebuild --store /tmp/replay-bench.sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table
from textual.widgets import DataTable

from testbed.replay.app import ReplayApp, RunsScreen
from testbed.replay.episodes_screen import PAGE, EpisodesScreen
from testbed.replay.label_screen import LabelScreen
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.store import Store

from replay_store import RARE_WORD, ensure_store, remove_store, store_facts

REPO = Path(__file__).resolve().parent.parent
DEFAULT_STORE = Path("/tmp/testbed-replay-bench/store.sqlite")
SIZE = (120, 40)
FIRST_SCREEN_MS, TABLE_MS, KEY_MS, REBUILD_MS = 1000.0, 3000.0, 200.0, 1000.0



@dataclass
class Figure:
    """One measured thing: its samples (ms), CPU ms per sample and the target it is held to (None: no target)."""

    name: str
    target_ms: float | None
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    note: str = ""

    def add(self, wall_s: float, cpu_s: float) -> None:
        """Add one sample, given in seconds."""
        self.wall_ms.append(1000 * wall_s)
        self.cpu_ms.append(1000 * cpu_s)

    @property
    def median(self) -> float:
        """Median wall ms (NaN when nothing was measured)."""
        return statistics.median(self.wall_ms) if self.wall_ms else float("nan")

    @property
    def verdict(self) -> str:
        """`ok`, `SLOW` against the target, `-` without one, `n/a` when unmeasured."""
        if not self.wall_ms:
            return "n/a"
        if self.target_ms is None:
            return "-"
        return "ok" if self.median < self.target_ms else "SLOW"

    def summary(self) -> dict:
        """The figure as JSON: first, median and max wall ms, median CPU ms, samples, target and verdict."""
        if not self.wall_ms:
            return {"n": 0, "target_ms": self.target_ms, "verdict": self.verdict, "note": self.note}
        return {"first_ms": round(self.wall_ms[0], 1), "median_ms": round(self.median, 1), "max_ms": round(max(self.wall_ms), 1),
                "cpu_median_ms": round(statistics.median(self.cpu_ms), 1), "n": len(self.wall_ms), "target_ms": self.target_ms,
                "verdict": self.verdict, **({"note": self.note} if self.note else {})}


class Figures(dict):
    """Figures by name, in the order first measured."""

    def get_or_add(self, name: str, target_ms: float | None) -> Figure:
        """The figure of this name, created with the target on first use."""
        if name not in self:
            self[name] = Figure(name, target_ms)
        return self[name]



def table_of(app: ReplayApp) -> DataTable | None:
    """The table of the screen on top, if it has one."""
    found = app.screen.query(DataTable)
    return found.first() if found else None


def episodes_filled(app: ReplayApp, rows: int) -> bool:
    """Whether the episode table is on top, showing `rows` episodes (the table holds their first page)."""
    table = table_of(app)
    return (isinstance(app.screen, EpisodesScreen) and table is not None and len(app.screen.shown) == rows
            and table.row_count == min(rows, PAGE))


def runs_filled(app: ReplayApp) -> bool:
    """Whether the runs table is on top and filled."""
    table = table_of(app)
    return isinstance(app.screen, RunsScreen) and table is not None and table.row_count > 0


def transcript_loaded(app: ReplayApp) -> bool:
    """Whether a transcript is on top with every message mounted."""
    screen = app.screen
    return isinstance(screen, TranscriptScreen) and hasattr(screen, "view") and len(screen.panels) == len(screen.view.turns)


def labelling_shown(app: ReplayApp) -> bool:
    """Whether the labelling screen is on top with its session open."""
    return isinstance(app.screen, LabelScreen) and hasattr(app.screen, "session")


async def until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Poll every 2 ms until the condition holds (TimeoutError after `timeout` seconds)."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not reach the expected screen")
        await asyncio.sleep(0.002)


async def press(pilot, figure: Figure, key: str, done: Callable[[], bool] | None = None) -> None:
    """Time one key as press + pause (and, given `done`, until it holds) into the figure."""
    w0, c0 = time.perf_counter(), time.process_time()
    await pilot.press(key)
    await pilot.pause()
    if done is not None:
        await until(done)
    figure.add(time.perf_counter() - w0, time.process_time() - c0)


async def first_screens(path: Path, run_id: str, rows: int, repeats: int, figures: Figures) -> None:
    """Runs screen from construction, then Enter to the episode table; the episode table opened straight."""
    runs = figures.get_or_add("runs screen (testbed replay)", FIRST_SCREEN_MS)
    enter = figures.get_or_add("runs: enter → episode table", TABLE_MS)
    direct = figures.get_or_add("episode table (testbed replay RUN)", TABLE_MS)
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        store = Store(path, readonly=True)
        app = ReplayApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: runs_filled(app))
            runs.add(time.perf_counter() - w0, time.process_time() - c0)
            await pilot.pause()
            await press(pilot, enter, "enter", lambda: episodes_filled(app, rows))
        store.close()
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        store = Store(path, readonly=True)
        app = ReplayApp(store, run_id)
        async with app.run_test(size=SIZE):
            await until(lambda: episodes_filled(app, rows))
            direct.add(time.perf_counter() - w0, time.process_time() - c0)
        store.close()


async def table_keys(pilot, app: ReplayApp, repeats: int, figures: Figures) -> None:
    """The floor, cursor moves, the errored and drifted filter cycles, sort and judge on the episode table."""
    floor, down = figures.get_or_add("floor: unbound key (f9)", None), figures.get_or_add("down (cursor)", KEY_MS)
    for _ in range(repeats):
        await press(pilot, floor, "f9")
        await press(pilot, down, "down")
    for key, states in (("e", ("errored", "!errored", "all")), ("d", ("drifted", "!drifted", "all"))):
        for _ in range(repeats):
            for state in states:
                await press(pilot, figures.get_or_add(f"{key} → {state}", REBUILD_MS), key)
    for _ in range(repeats):
        await press(pilot, figures.get_or_add("s (sort by next column)", REBUILD_MS), "s")
    for _ in range(repeats):
        await press(pilot, figures.get_or_add("j (next judge)", REBUILD_MS), "j")


async def filter_keys(pilot, app: ReplayApp, repeats: int, figures: Figures) -> None:
    """Open the filter line, type the rare word, apply it, clear it with `x`."""
    slash, char = figures.get_or_add("/ (open filter line)", KEY_MS), figures.get_or_add("type a character", KEY_MS)
    apply = figures.get_or_add(f"enter: free text {RARE_WORD!r}", REBUILD_MS)
    clear = figures.get_or_add("x (clear filter)", REBUILD_MS)
    for _ in range(repeats):
        await press(pilot, slash, "slash")
        for letter in RARE_WORD:
            await press(pilot, char, letter)
        await press(pilot, apply, "enter")
        kept = len(app.screen.shown) if isinstance(app.screen, EpisodesScreen) else None
        await press(pilot, clear, "x")
    apply.note = f"{kept} rows kept"


TRANSCRIPT_STEPS = (
    ("home", "home (rewind)", lambda screen, cursor: 0),
    ("right", "right (next turn)", lambda screen, cursor: min(cursor + 1, len(screen.view.turns) - 1)),
    ("left", "left (previous turn)", lambda screen, cursor: max(cursor - 1, 0)),
    ("end", "end (show all)", lambda screen, cursor: len(screen.view.turns) - 1),
    ("o", "o (drift onset)", lambda screen, cursor: cursor if screen.view.onset_position is None else screen.view.onset_position),
)
"""(key, figure name, the cursor the key should leave given the screen and the cursor before it) inside a transcript."""


async def transcript_steps(pilot, app: ReplayApp, figures: Figures, misses: dict[str, int]) -> None:
    """Each step key once in the open transcript, counting the presses that left the cursor elsewhere than expected."""
    for key, name, expected in TRANSCRIPT_STEPS:
        screen = app.screen
        want = expected(screen, screen.cursor)
        await press(pilot, figures.get_or_add(name, KEY_MS), key)
        if screen.cursor != want:
            misses[name] = misses.get(name, 0) + 1


async def transcript_keys(pilot, app: ReplayApp, repeats: int, figures: Figures) -> None:
    """Under the drifted filter: open an episode, step, rewind, show all, jump to the onset, next episode, back."""
    await pilot.press("x", "d")
    await pilot.pause()
    stacked, misses = [], {}
    for _ in range(repeats):
        await pilot.press("down")
        await press(pilot, figures.get_or_add("enter → transcript", KEY_MS), "enter", lambda: transcript_loaded(app))
        stacked.append(len(app.screen_stack))
        await transcript_steps(pilot, app, figures, misses)
        index = app.screen.index
        await press(pilot, figures.get_or_add("] (next episode)", KEY_MS), "right_square_bracket",
                    lambda: transcript_loaded(app) and app.screen.index == index + 1)
        await press(pilot, figures.get_or_add("escape → episode table", KEY_MS), "escape",
                    lambda: isinstance(app.screen, EpisodesScreen))
    for name, count in misses.items():
        figures[name].note = f"cursor not moved in {count}/{repeats}: the key went to the focused scroll view"
    if set(stacked) != {4}:
        figures["enter → transcript"].note = f"screen stack depths after enter: {stacked} (expected 4)"


async def keypresses(path: Path, run_id: str, rows: int, repeats: int, figures: Figures) -> None:
    """Every keypress on one app opened straight on the run."""
    store = Store(path, readonly=True)
    app = ReplayApp(store, run_id)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: episodes_filled(app, rows))
        await pilot.pause()
        await table_keys(pilot, app, repeats, figures)
        await filter_keys(pilot, app, repeats, figures)
        await transcript_keys(pilot, app, repeats, figures)
    store.close()


def copy_store(path: Path) -> Path:
    """A fresh copy of the store beside it, for the labelling screen to write to."""
    copy = path.with_name(path.stem + "-label-copy.sqlite")
    remove_store(copy)
    shutil.copyfile(path, copy)
    wal = path.with_name(path.name + "-wal")
    if wal.is_file():
        shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
    return copy


async def labelling(path: Path, run_id: str, repeats: int, figures: Figures) -> None:
    """The labelling screen on a copy of the store: time to first screen, then label keys (`1`)."""
    first, key = figures.get_or_add("label screen (--label bench)", TABLE_MS), figures.get_or_add("1 (label the turn)", KEY_MS)
    copy = copy_store(path)
    for r in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        store = Store(copy)
        app = ReplayApp(store, run_id, annotator="bench")
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: labelling_shown(app))
            first.add(time.perf_counter() - w0, time.process_time() - c0)
            await pilot.pause()
            if r == repeats - 1:
                for _ in range(repeats):
                    await press(pilot, key, "1")
        store.close()
    remove_store(copy)


async def headless(path: Path, run_id: str, rows: int, repeats: int, console: Console) -> Figures:
    """Every headless measurement, in order."""
    figures = Figures()
    console.print("headless: first screens ...", highlight=False)
    await first_screens(path, run_id, rows, repeats, figures)
    console.print("headless: keypresses ...", highlight=False)
    await keypresses(path, run_id, rows, repeats, figures)
    console.print("headless: labelling screen ...", highlight=False)
    await labelling(path, run_id, repeats, figures)
    return figures



def tmux_launch(command: str, marker: str, timeout: float = 60.0) -> float | str:
    """Seconds from starting `command` in a detached 120x40 tmux session until the pane shows `marker`, or why not."""
    session = f"bench-replay-{time.time_ns()}"
    started = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]), command], check=True)
    try:
        while time.perf_counter() - started < timeout:
            pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True)
            if pane.returncode != 0:
                return "the command exited before the screen showed"
            if marker in pane.stdout:
                return time.perf_counter() - started
            time.sleep(0.05)
        return f"{marker!r} did not appear within {timeout:g} s"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def in_tmux(path: Path, run_id: str, rows: int, repeats: int, figures: Figures) -> None:
    """`testbed replay` and `testbed replay RUN` in a real terminal, from launch to the table on screen."""
    exe = REPO / ".venv" / "bin" / "testbed"
    cases = [("tmux: testbed replay (runs list)", f"{exe} replay --store {path}", run_id),
             ("tmux: testbed replay RUN (episode table)", f"{exe} replay {run_id} --store {path}", f"of {rows} episodes")]
    for name, command, marker in cases:
        figure = figures.get_or_add(name, None)
        for _ in range(repeats):
            got = tmux_launch(command, marker)
            if isinstance(got, str):
                figure.note = got
                break
            figure.add(got, 0.0)



def report(figures: Figures, console: Console) -> None:
    """The table of every figure: first, median, max, CPU, target and verdict."""
    table = Table(title="replay app timings (ms)", title_justify="left")
    for heading in ("what", "first", "median", "max", "cpu med", "target", "", "note"):
        table.add_column(heading, justify="left" if heading in ("what", "note", "") else "right", no_wrap=heading != "note")
    for f in figures.values():
        s = f.summary()
        if not s["n"]:
            table.add_row(f.name, "-", "-", "-", "-", "-", s["verdict"], f.note)
            continue
        target = f"< {f.target_ms:g}" if f.target_ms is not None else "-"
        style = "bold red" if s["verdict"] == "SLOW" else ""
        table.add_row(f.name, f"{s['first_ms']:.0f}", f"{s['median_ms']:.0f}", f"{s['max_ms']:.0f}",
                      f"{s['cpu_median_ms']:.0f}" if "tmux" not in f.name else "-", target, s["verdict"], f.note, style=style)
    console.print(table)


def main() -> None:
    """Parse arguments, build or reuse the store, measure headless (and in tmux), print the table and the RESULT line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=10_000, help="episodes in the run (10 messages each)")
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="where the store is built and cached")
    p.add_argument("--rebuild", action="store_true", help="build the store even when the cached one matches")
    p.add_argument("--repeats", type=int, default=5, help="times each screen and key is measured")
    p.add_argument("--seed", type=int, default=0, help="seed of the made-up texts and labels")
    p.add_argument("--tmux", action="store_true", help="also time the real command in a tmux pane")
    args = p.parse_args()
    if args.episodes < 100 or args.repeats < 1:
        p.error("--episodes must be at least 100 and --repeats at least 1")
    console = Console(highlight=False, width=shutil.get_terminal_size((150, 40)).columns)
    build = ensure_store(args.store, args.episodes, args.seed, args.rebuild, console)
    facts = store_facts(args.store, args.episodes)
    console.print(f"store: {facts['episodes']} episodes ({facts['errored']} errored), {facts['messages']} messages, "
                  f"{facts['size_mb']} MiB; {facts['rare_word_episodes']} episodes contain {RARE_WORD!r}")
    figures = asyncio.run(headless(args.store, facts["run_id"], facts["episodes"], args.repeats, console))
    tmux = None
    if args.tmux and shutil.which("tmux") is None:
        console.print("--tmux: tmux is not installed, skipped")
    elif args.tmux:
        console.print("tmux: launching the real command ...")
        in_tmux(args.store, facts["run_id"], facts["episodes"], args.repeats, figures)
        tmux = {name: f.summary() for name, f in figures.items() if name.startswith("tmux")}
    report(figures, console)
    slow = [f.name for f in figures.values() if f.verdict == "SLOW"]
    console.print(f"{len(slow)} SLOW: {', '.join(slow)}" if slow else "every target met")
    result = {"store": str(args.store), **build, **facts, "repeats": args.repeats, "size": list(SIZE),
              "headless": {name: f.summary() for name, f in figures.items() if not name.startswith("tmux")}, "tmux": tmux,
              "slow": slow}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
