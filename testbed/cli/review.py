"""`testbed review`: people or a model judge decide the turns the fast judge doubts; reviewed labels for every face."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, console, fail, open_store, run_async
from testbed.cli.choices import judge_help
from testbed.cli.given_names import given_judge, given_name
from testbed.cli.shell import Terminated, require_user_turns
from testbed.specs.errors import SpecError
from testbed.store.labels import DEFAULT_JUDGE, HUMAN
from testbed.store.sqlite_store import StoreError


@app.command()
def review(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    by: Annotated[str, typer.Option("--by", help=judge_help("who reviews: human:NAME (the labelling app) or an LLM judge", prompted=True))],
    share: Annotated[float, typer.Option("--share", help="share of the turns to review, least sure first (0 < share ≤ 1)")] = 0.2,
    model: Annotated[Optional[str], typer.Option(help="agent spec the reviewing model judge runs on, replacing the spec's")] = None,
    fast: Annotated[str, typer.Option("--fast", help=judge_help("the fast judge whose doubt picks the turns (labels the run first if it has not)", prompted=False))] = DEFAULT_JUDGE,
    app_: Annotated[bool, typer.Option("--app/--no-app", help="with human:NAME, open the labelling app on the chosen turns (needs a terminal)")] = True,
    store: StoreOpt = None,
) -> None:
    """Send the fast judge's least sure turns to review and store reviewed labels (`reviewed@<fast>/<share>:<reviewer>`):
    the review's verdict where there is one, else the fast judge's. Run it again to go on reviewing; the report,
    plot, compare, export and agree read the reviewed labels like any judge's."""
    from testbed.judges.review import ReviewError, compose_review, plan_review

    if by.partition(":")[0] == HUMAN:
        given_name(by.partition(":")[2], "--by human:NAME")
    else:
        given_judge(by, "--by")
    given_judge(fast, "--fast")
    db = open_store(store)
    try:
        run = db.run(run_id).run_id
        require_user_turns(db, run)
        first = _fast_identity(db, run, fast)
        plan = plan_review(db, run, first, share)
        reviewer = _reviewer(db, run, plan, by, model, app_)
        composed = compose_review(db, plan, reviewer)
    except (StoreError, SpecError, ReviewError, ValueError) as exc:
        fail(str(exc))
    n = sum(composed.decided.values())
    parts = [f"{composed.decided['fast']} ({composed.decided['fast'] / n:.0%}) by {plan.fast}",
             f"{composed.decided['review']} ({composed.decided['review'] / n:.0%}) by {reviewer}"]
    if composed.decided["pending"]:
        parts.append(f"{composed.decided['pending']} chosen but not reviewed yet (the fast verdict stands; run this again to go on)")
    console.print(f"{composed.identity}: {n} turns; " + ", ".join(parts), highlight=False, soft_wrap=True)
    console.print(f"report it: testbed report {run} --judge reviewed", highlight=False, soft_wrap=True)


def _fast_identity(db, run: str, fast: str):
    """The fast judge's identity on the run, labelling the run with it first when it has not labelled it."""
    from testbed.judges.runner import judge_run
    from testbed.judges.specs import load_judge
    from testbed.store.labels import default_identity

    found = default_identity(db, run, fast)
    if found is not None:
        return found
    summary = run_async(judge_run(db, run, load_judge(fast), console=console, show_progress=False))
    console.print(f"labelled {summary.scored} turns with {summary.identity} first (the fast stage)", highlight=False)
    return summary.identity


def _reviewer(db, run: str, plan, by: str, model: str | None, open_app: bool):
    """The reviewer's identity, after it reviewed what it can now: people in the labelling app, a judge on the chosen turns."""
    from testbed.backends.base import BackendError

    if by.partition(":")[0] == HUMAN:
        return _people(db, run, plan, by.partition(":")[2], open_app)
    from testbed.judges.runner import judge_run
    from testbed.judges.specs import load_judge

    judge = load_judge(by, model=model)
    try:
        summary = run_async(judge_run(db, run, judge, console=console, only=plan.chosen))
    except BackendError as exc:
        fail(f"{exc.reason}\nReview labels written before this are kept; run the same command again to continue.")
    except (KeyboardInterrupt, Terminated):
        fail("stopped; review labels written before this are kept; run the same command again to continue.", 130)
    console.print(f"{summary.identity} reviewed {summary.scored} of the {len(plan.chosen)} chosen turns now "
                  f"({summary.unscored} unscored, {summary.skipped} reviewed before)", highlight=False)
    return summary.identity


def _people(db, run: str, plan, name: str, open_app: bool):
    """A person's identity; with a terminal (and the app allowed), they label the chosen turns in the app first."""
    from testbed.replay.labelling import annotator

    who = annotator(name, "--by human:NAME")
    if not open_app:
        return who
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        console.print(f"no terminal: the labelling app was not opened; run this in a terminal to label the "
                      f"{len(plan.chosen)} chosen turns (or pass --no-app to compose what is labelled)", highlight=False)
        return who
    from testbed.replay.app import ReplayApp

    ReplayApp(db, run, annotator=name, doubt_of=plan.fast, only=frozenset(plan.chosen)).run()
    return who
