"""Live progress for long work: done/total, errors so far, generated tokens per second."""

from __future__ import annotations

import time

from rich import get_console
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


REFRESH_PER_S = 4
"""How often the bar is redrawn: each redraw renders every column on the run's one core, and a person
watching gains nothing from rich's default of ten a second."""


class EpisodeProgress:
    """A rich progress bar over episodes (or judged turns); silent when disabled (tests, --quiet) and when the
    console is not a terminal (output redirected to a file or a pipe gets no bar drawn into it).

    `advance` updates the counts; the bar is drawn `REFRESH_PER_S` times a second by rich's own thread.
    """

    def __init__(self, description: str, total: int, *, console: Console | None = None, enabled: bool = True,
                 error_label: str = "errors"):
        self.errors = 0
        self.tokens = 0
        self._started = time.perf_counter()
        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
            TextColumn(error_label + " {task.fields[errors]}", markup=False), TextColumn("{task.fields[rate]} tok/s", markup=False),
            TimeElapsedColumn(), TimeRemainingColumn(), console=console,
            disable=not (enabled and (console or get_console()).is_terminal), transient=False,
            refresh_per_second=REFRESH_PER_S,
        )
        self._task = self._progress.add_task(description, total=total, errors=0, rate="0")

    def advance(self, *, error: bool, tokens: int) -> None:
        """Count one finished episode."""
        self.errors += int(error)
        self.tokens += tokens
        rate = self.tokens / max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(self._task, advance=1, errors=self.errors, rate=f"{rate:,.1f}")

    def __enter__(self) -> "EpisodeProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
