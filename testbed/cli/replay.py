"""`testbed replay` (the terminal app) and `testbed show-episode` (one transcript printed, for pipes and notes)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, console, fail, open_store
from testbed.cli.given_names import given_judge
from testbed.cli.graphs import episode_named
from testbed.store.sqlite_store import StoreError


def _judge(db, run_id: str, selector: str | None):
    from testbed.store.labels import default_identity, resolve_identity

    given_judge(selector, "--judge")
    try:
        return resolve_identity(db, run_id, selector) if selector else default_identity(db, run_id)
    except StoreError as exc:
        fail(str(exc))


@app.command()
def replay(
    run_id: Annotated[Optional[str], typer.Argument(help="open this run (a unique prefix is enough); omit for every run")] = None,
    episode: Annotated[Optional[str], typer.Argument(help="open this episode of the run (a unique prefix is enough)")] = None,
    label: Annotated[Optional[str], typer.Option("--label", help="label the run's user turns by hand as human:NAME, judges hidden")] = None,
    seed: Annotated[int, typer.Option(help="seed of the labelling order (the same seed gives every annotator the same order)")] = 0,
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels mark drift (default: reviewed, else learned, else local labels); j cycles in the app")] = None,
    uncertain_first: Annotated[Optional[str], typer.Option("--uncertain-first", help="with --label: the turns this judge (e.g. learned) was least sure of come first")] = None,
    store: StoreOpt = None,
) -> None:
    """Browse runs, replay transcripts turn by turn, or label user turns by hand (`--label NAME`). `?` lists every key."""
    from testbed.replay.app import ReplayApp
    from testbed.replay.labelling import annotator
    from testbed.store.labels import resolve_identity

    given_judge(uncertain_first, "--uncertain-first")
    if label is not None and run_id is None:
        fail("--label needs a run: testbed replay RUN --label NAME")
    if label is not None and episode is not None:
        fail("--label labels a whole run; leave out the episode")
    db = open_store(store, readonly=label is None)
    run, episode_id, who, doubt_of = None, None, None, None
    try:
        if run_id is not None:
            run = db.run(run_id).run_id
            who = _judge(db, run, judge)
            if episode is not None:
                episode_id = episode_named([e.key.episode_id for e in db.episodes(run)], episode, run)
        doubt_of = resolve_identity(db, run, uncertain_first) if uncertain_first is not None and run is not None else None
        if uncertain_first is not None and label is None:
            fail("--uncertain-first orders the labelling queue: use it with --label NAME")
        if label is not None:
            annotator(label)
            if next(db.turn_keys(run), None) is None:
                fail(f"run {run} has no finished episode with a generated user turn to label")
    except (StoreError, ValueError) as exc:
        fail(str(exc))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("testbed replay needs a terminal; to print one transcript into a pipe use: testbed show-episode RUN EPISODE")
    ReplayApp(db, run, episode_id, annotator=label, seed=seed, judge=who, doubt_of=doubt_of).run()
    if label is not None:
        console.print(f"labels are stored as human:{label}; compare them with: testbed agree {run} --a learned --b human:{label}")


@app.command("show-episode")
def show_episode(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    episode: Annotated[str, typer.Argument(help="episode id (a unique prefix is enough)")],
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels mark the drift onset (default: reviewed, else learned, else local labels)")] = None,
    full: Annotated[bool, typer.Option("--full", help="print every message whole (a message over 8,000 characters is otherwise shown in part: its start, its size, its end)")] = False,
    store: StoreOpt = None,
) -> None:
    """Print one transcript with its roles, labels, source edges and drift onset (for pipes and notes); a long message
    is printed in part, with its size, unless --full."""
    from testbed.replay.catalog import RunCatalog
    from testbed.replay.episode_view import episode_view
    from testbed.replay.render import print_episode

    db = open_store(store, readonly=True)
    try:
        run = db.run(run_id).run_id
    except StoreError as exc:
        fail(str(exc))
    who = _judge(db, run, judge)
    catalog = RunCatalog.load(db, run)
    chosen = episode_named([e.key.episode_id for e in catalog.episodes], episode, run)
    print_episode(episode_view(db, catalog, catalog.episode(chosen), who), console, full=full)
