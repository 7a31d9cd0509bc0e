"""`testbed report`: what a run measured, per condition group, with its judge labels (testbed.cli.report_output prints it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app
from testbed.cli.given_names import given_judge
from testbed.cli.report_output import print_report
from testbed.cli.shell import fail, open_store


@app.command()
def report(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    format: Annotated[str, typer.Option("--format", "-f", help="table | markdown | csv | json (their shape: below)")] = "table",
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels to show (default: reviewed, else learned, else local labels; `none` for none)")] = None,
    correct_with: Annotated[Optional[Path], typer.Option("--correct-with", help="the judge's error counts on a labelled set (eval-judge --save-error-rates): adds corrected follow-up rates")] = None,
    errored: Annotated[Optional[str], typer.Option("--errored", help="τ² runs: errored episodes in the reward as `zero` (default; τ²'s leaderboard convention) or `left-out`")] = None,
    store: StoreOpt = None,
) -> None:
    """Print what a run measured, per model × dataset × mode × temperature, with judge labels.

    --format json prints a list of records, one per condition, each number with its interval; a run over real users
    adds the realism table's columns as realism_* keys (the real users' own figures on their row), a perturbed
    condition the perturbation table's as perturbed_* keys, and a condition whose episodes failed error_reasons
    ({reason: episodes}). csv has the same columns; markdown has the report's table, then every table the terminal
    shows under it."""
    from testbed.analysis.reports.render import FORMATS
    from testbed.specs.registries import KINDS, kind_views

    if format not in FORMATS:
        fail(f"unknown --format {format!r}; use one of {', '.join(FORMATS)}")
    given_judge(judge, "--judge")
    errored_as = list(dict.fromkeys(way for kind in KINDS.names() for way in kind_views(kind).errored_as))
    if errored is not None and errored not in errored_as:
        fail(f"unknown --errored {errored[:40]!r}; use one of {', '.join(errored_as)}")
    print_report(open_store(store, readonly=True), run_id, format, judge, correct_with, errored)
