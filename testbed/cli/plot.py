"""`testbed plot`: the run's figures as PNGs, each beside a CSV of exactly the numbers drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, fail, open_store, say
from testbed.cli.output import output_folder
from testbed.cli.shell import labelled_run


@app.command()
def plot(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels: name, name:model, name@version (default: reviewed, else learned, else local labels)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output folder (default plots/<run id>/)")] = None,
    store: StoreOpt = None,
) -> None:
    """Draw accuracy vs follow-up, follow-up vs temperature, perturbation effects, failure modes, in-role
    survival and, on real contexts, realism; a figure the run cannot support is skipped with the reason."""
    from testbed.analysis.figures.drawing import write_figures
    from testbed.analysis.frames import shared_reads

    db = open_store(store, readonly=True)
    run, who = labelled_run(db, run_id, judge)
    folder = output_folder(out if out is not None else Path("plots") / run)
    with shared_reads():
        result = write_figures(db, run, who, folder)
    for png in result.written:
        say(f"wrote {png} (numbers in {png.with_suffix('.csv').name})")
    for name, reason in result.skipped:
        say(f"skipped {name}: {reason}")
    if not result.written:
        fail(f"no figure could be drawn for run {run} with judge {who} (reasons above): run a scenario that varies "
             f"temperatures, perturbations or models, or label more turns with `testbed judge {run}`", 1)
