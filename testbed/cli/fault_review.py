"""`testbed review-faults`: a model's word on whether each flagged simulated-user fault hindered the agent."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, console, fail, open_store, run_async, say
from testbed.cli.choices import judge_help
from testbed.cli.given_names import given_judge
from testbed.specs.errors import SpecError

KEPT = "Reviews written before this are kept; run the same command again to continue."
JUDGE_HELP = judge_help("the reviewing model: an agent spec, or an LLM judge (its agent and settings)", prompted=True)
WHOLE_HELP = ("review every finished episode's whole conversation in the kind's error taxonomy (tags and severity per "
              "user turn, with the user's instructions and guidelines) instead of only the turns the rules flagged")
LABELS_HELP = "whose role-drift labels flag drift, as in `report --judge` (default: the run's reviewed, learned or local labels; none: no drift)"


@app.command("review-faults")
def review_faults(
    run_id: Annotated[str, typer.Argument(help="run id of a kind whose simulated user's faults are detected (a unique prefix is enough)")],
    judge: Annotated[str, typer.Option("--judge", "-j", help=JUDGE_HELP)],
    labels: Annotated[Optional[str], typer.Option(help=LABELS_HELP)] = None,
    whole: Annotated[bool, typer.Option("--whole", help=WHOLE_HELP)] = False,
    store: StoreOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
) -> None:
    """Ask a model, for every fault the rules flagged on a user turn of a finished episode, whether it hindered the
    agent or was harmless; faults it already gave a verdict on are skipped. Faults not stored yet (a run made before
    they were) are stored first. `testbed report` then shows the share judged hindering per condition.

    With --whole, the model instead reads each finished episode's whole conversation, with the user's instructions
    and the simulation guidelines it was given, and names every user turn with an error: its tags and one severity in
    the kind's taxonomy (τ²'s: hallucination, revealed_info_early, ... ; critical_hindered, critical_helped, minor).
    Verdicts are stored per user turn under the reviewer's identity (user-review@<prompt version>:<model>); episodes it
    already scored are skipped. `testbed report` then shows the share of episodes with a reviewer-tagged error per
    condition and, where the rules checked the same episodes, their agreement with the reviewer."""
    from testbed.judges.fault_review import load_reviewer
    from testbed.judges.fault_review_run import faults_to_review
    from testbed.judges.fault_review_run import review_faults as review
    from testbed.specs.registries import kind_views
    from testbed.store.labels import fast_identity, resolve_identity

    given_judge(judge, "--judge")
    given_judge(labels, "--labels")
    try:
        reviewer = load_reviewer(judge)
    except SpecError as exc:
        fail(str(exc))
    if whole:
        if labels is not None:
            fail("--labels picks whose role-drift flags the flagged-fault review asks about; --whole reviews every user "
                 "turn and flags none: drop --labels")
        from testbed.cli.conversation_review import review_whole

        review_whole(run_id, reviewer, store, quiet)
        return
    from testbed.cli.conversation_review import kept_on_failure

    db = open_store(store)
    with kept_on_failure(KEPT):
        run = db.run(run_id)["run_id"]
        drift = None if labels == "none" else resolve_identity(db, run, labels) if labels else fast_identity(db, run)
        detector = kind_views(db.run(run).kind).faults
        if detector is None:
            say(f"run {run} is of a kind whose simulated user's faults are not detected: nothing to review")
            return
        detector.store_faults(db, run)
        if drift is not None:
            detector.store_judged_faults(db, run, drift)
        faults = faults_to_review(db, run, drift, detector.meanings)
        if not faults:
            say(f"run {run} has no flagged user faults in its finished episodes: nothing to review"
                + (f" ({why})" if (why := detector.missing(db, run)) else ""))
            return
        summary = run_async(review(db, run, faults, reviewer, console=console, show_progress=not quiet))
    asked = summary.flagged - summary.skipped
    say(f"reviewer {summary.identity}: {summary.hindered} hindered, {summary.harmless} harmless, {summary.unscored} unscored "
        f"of {asked} flagged faults asked now; {summary.skipped} already reviewed before")
