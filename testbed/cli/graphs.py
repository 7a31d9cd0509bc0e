"""`testbed graph`: conversation graphs, label transitions and drift survival of a judged run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, console, fail, open_store
from testbed.cli.output import output_folder
from testbed.cli.shell import labelled_run


def episode_named(known: list[str], wanted: str, run_id: str) -> str:
    """The one episode id `wanted` names, exactly or as a unique prefix; fail (exit 2) saying why otherwise."""
    from testbed.analysis.figures.run_graphs import UnknownEpisode, find_episode

    try:
        return find_episode(known, wanted, run_id)
    except UnknownEpisode as exc:
        fail(str(exc))


@app.command()
def graph(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    episode: Annotated[Optional[str], typer.Argument(help="one episode id or unique prefix (default: the run's overview)")] = None,
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels: name, name:model, name@version (default: reviewed, else learned, else local labels)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output folder (default graphs/<run id>/)")] = None,
    episodes: Annotated[int, typer.Option("--episodes", "-n", min=0, help="episode graphs to draw in the overview, drifted first")] = 6,
    store: StoreOpt = None,
) -> None:
    """Draw conversation graphs (GraphML + PNG): one episode, or the run's label transitions, in-role
    survival curves and its most telling episodes (drifted ones first, earliest onset first)."""
    from testbed.analysis.figures.run_graphs import UnknownEpisode, draw_run_graphs

    db = open_store(store, readonly=True)
    run, who = labelled_run(db, run_id, judge)
    folder = output_folder(out if out is not None else Path("graphs") / run)
    try:
        drawn = draw_run_graphs(db, run, who, folder, episode=episode, episodes=episodes)
    except UnknownEpisode as exc:
        fail(str(exc))
    for path in drawn.paths:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    console.print(f"{drawn.summary} (labels by {who})", highlight=False, soft_wrap=True)
