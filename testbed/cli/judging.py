"""`testbed judge`, `agree`, `eval-judge`, `import-labels`: labels on stored turns, and how far to trust them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, console, fail, open_store, run_async
from testbed.cli.choices import judge_help
from testbed.cli.report_output import error_rates_file
from testbed.cli.given_names import given_judge, given_name
from testbed.cli.shell import Terminated, say
from testbed.fitted_table import FitColumn, FittedTable, frame_table
from testbed.specs.errors import SpecError
from testbed.store.labels import DEFAULT_JUDGE
from testbed.store.sqlite_store import StoreError


CONDITION_KEY = 4
"""The leading columns of eval-judge's per-condition tables that name a condition (source model, mode, temperature,
perturbation): each card's title where such a table is folded at a narrow width."""


def _load_judge(judge: str, model: str | None, option: str = "--judge"):
    from testbed.judges.specs import load_judge

    given_judge(judge, option)
    try:
        return load_judge(judge, model=model)
    except SpecError as exc:
        fail(str(exc))


@app.command()
def judge(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    judge: Annotated[str, typer.Option("--judge", "-j", help=judge_help("who labels the user turns"))] = DEFAULT_JUDGE,
    model: Annotated[Optional[str], typer.Option(help="agent spec the LLM judge runs on, replacing the spec's")] = None,
    store: StoreOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
) -> None:
    """Label every user turn of a run; turns this judge already scored are skipped, other judges' labels stay."""
    from testbed.backends.base import BackendError
    from testbed.judges.runner import judge_run
    from testbed.running.user_faults import store_judged_faults

    resolved = _load_judge(judge, model)
    db = open_store(store)
    try:
        run = db.run(run_id)
        summary = run_async(judge_run(db, run["run_id"], resolved, console=console, show_progress=not quiet))
        store_judged_faults(db, run["run_id"], summary.identity)
    except (StoreError, SpecError) as exc:
        fail(str(exc))
    except BackendError as exc:
        fail(f"{exc.reason}\nLabels written before this are kept; run the same command again to continue.")
    except (KeyboardInterrupt, Terminated):
        fail("stopped; labels written before this are kept; run the same command again to continue.", 130)
    console.print(f"judge {summary.identity}: {summary.scored} scored, {summary.unscored} unscored of {summary.turns - summary.skipped} "
                  f"turns judged now; {summary.skipped} already scored before")


@app.command()
def agree(
    run_id: Annotated[str, typer.Argument(help="run id")],
    a: Annotated[str, typer.Option("--a", help="first annotator: a judge name, name:model, name@version, or human[:name]")],
    b: Annotated[str, typer.Option("--b", help="second annotator, the reference for precision and recall")],
    more: Annotated[Optional[list[str]], typer.Option("--c", help="further annotators: adds Fleiss' κ over all")] = None,
    store: StoreOpt = None,
) -> None:
    """Cohen's κ, per-label precision/recall and the confusion matrix between two annotators of a run."""
    from testbed.analysis.judge_quality.agreement import fleiss_kappa
    from testbed.analysis.judge_quality.annotations import binary_and_label_agreement, common_labels

    for option, names in (("--a", [a]), ("--b", [b]), ("--c", more or [])):
        for name in names:
            given_judge(name, option)
    db = open_store(store, readonly=True)
    try:
        run = db.run(run_id)["run_id"]
        frames = common_labels(db, run, [a, b, *(more or [])])
    except StoreError as exc:
        fail(str(exc))
    result = binary_and_label_agreement(frames, a, b)
    console.print(f"{a} vs {b} on {result['n']} turns labelled by both (unscored excluded)")
    console.print(f"follow-up (binary): Cohen's κ = {result['binary_kappa']:.3f}")
    if result["labels"] is not None:
        ag = result["labels"]
        console.print(f"8-way labels: Cohen's κ = {ag.kappa:.3f}, raw agreement = {ag.observed:.1%}")
        table = FittedTable((FitColumn(col, justify="left" if col == "label" else "right")
                             for col in ("label", "precision", "recall", "f1", "support")), title=f"per label ({b} as reference)")
        for r in ag.per_label.itertuples(index=False):
            table.add_row(r.label, *(f"{x:.2f}" if x == x else "n/a" for x in (r.precision, r.recall, r.f1)), str(r.support))
        console.print(table)
        console.print(f"confusion (rows {a}, columns {b}):")
        console.print(frame_table(ag.confusion.rename_axis(a), index=True))
    if more:
        names = [a, b, *more]
        use_labels = all(frames[n].notna().all() for n in names)
        columns = names if use_labels else [n + "|followup" for n in names]
        ratings = frames[columns].astype(str).values.tolist()
        console.print(f"Fleiss' κ over {len(names)} annotators ({'labels' if use_labels else 'follow-up'}): "
                      f"{fleiss_kappa(ratings):.3f} on {len(ratings)} turns")


@app.command("eval-judge")
def eval_judge(
    gold: Annotated[Path, typer.Argument(help="JSONL with question, assistant, user_turn, label per line", exists=True, dir_okay=False)],
    judge: Annotated[str, typer.Option("--judge", "-j", help=judge_help("who labels the user turns"))] = DEFAULT_JUDGE,
    model: Annotated[Optional[str], typer.Option(help="agent spec the LLM judge runs on")] = None,
    save_error_rates: Annotated[Optional[Path], typer.Option(help="write the judge's follow-up error counts here (for `report --correct-with`)")] = None,
    record: Annotated[bool, typer.Option("--record", help="append the result to judge-evaluations.jsonl in the testbed cache, "
                                         "so reports show it beside the judge")] = False,
    correct_with: Annotated[Optional[Path], typer.Option("--correct-with", help="error counts measured on other turns "
                            "(e.g. judges/models/learned-6.cv-error-rates.probe.json, the CV counts on probe turns): correct each condition's rate and say "
                            "whether its interval covers the reference rate")] = None,
    review_share: Annotated[Optional[float], typer.Option("--review-share", min=0.0, max=1.0, help="with --correct-with: "
                            "the least sure share of turns take the reference label, as `testbed review` would send them, "
                            "and each condition's reviewed rate is corrected as the report corrects it")] = None,
    reviewer: Annotated[Optional[str], typer.Option("--reviewer", help=judge_help("an LLM judge that gives labels", prompted=True) + " "
                        "that reviews the fast judge's least sure turns: prints the agreement of reviewed labels with this "
                        "reviewer instead of the reference; only those turns are judged")] = None,
    reviewer_model: Annotated[Optional[str], typer.Option("--reviewer-model", help="agent spec the reviewer runs on")] = None,
    reviewer_upto: Annotated[float, typer.Option("--reviewer-upto", min=0.0, max=1.0, help="with --reviewer: the largest "
                             "share of turns it reviews (the curve stops there)")] = 0.25,
) -> None:
    """Score a judge against reference labels: per-label P/R/F1, the follow-up rate per condition beside the
    reference's, for a learned judge the agreement bought by labelling its least sure turns by hand,
    and last the line `kappa=<κ> f1_followup=<F1> n=<items>`. With --correct-with each condition's rate is
    corrected with error counts measured elsewhere and checked against the reference, and with --review-share
    so is the rate of reviewed labels (the reference as reviewer). With --reviewer an LLM judge reviews the
    least sure turns and the curve is printed again with its labels. With --record the figures are kept, with
    the set's sha256, as the measured figures behind this judge (testbed.judges.evaluations)."""
    from testbed.analysis.judge_quality.judge_eval import (error_rates, evaluate, gold_conditions, hand_labelling_curve, per_condition_rates,
                                             read_gold, reviewed_conditions, run_judge,
                                             with_corrected_conditions)
    from testbed.judges.learned.doubt import stored_margin

    resolved = _load_judge(judge, model)
    review_judge = _load_judge(reviewer, reviewer_model, "--reviewer") if reviewer is not None else None
    correction = error_rates_file(correct_with) if correct_with is not None else None
    if review_share is not None and (correction is None or not correction.turns):
        fail("--review-share needs --correct-with error counts that hold per-turn margins (the trainer's "
             "judges/models/learned-6.cv-error-rates.<kind>.json, or a file eval-judge --save-error-rates wrote for the learned judge)")
    try:
        rows = read_gold(gold)
    except SpecError as exc:
        fail(str(exc))
    try:
        verdicts = asyncio.run(run_judge(resolved, [item for item, _ in rows]))
    except SpecError as exc:
        fail(str(exc))
    references = [label for _, label in rows]
    result = evaluate(verdicts, references)
    if result.labels is not None:
        console.print(frame_table(result.labels.per_label, key=1))
    table = per_condition_rates(verdicts, references, gold_conditions(gold))
    if correction is not None:
        table = with_corrected_conditions(table, correction)
    if len(table) > 1 or correction is not None:
        console.print("follow-up rate per condition (reference beside judge"
                      + (f", corrected with {correction.source}):" if correction is not None else "):"), soft_wrap=True)
        console.print(frame_table(table, key=CONDITION_KEY))
    if correction is not None:
        console.print(f"corrected 95% intervals cover the reference rate in {int(table.covers.sum())} of {len(table)} conditions")
    if review_share is not None:
        if not all(stored_margin(v.raw) is not None for v in verdicts if v.scored):
            fail(f"--review-share needs a judge that stores its margin (--judge learned), not {judge}")
        reviewed = reviewed_conditions(verdicts, references, gold_conditions(gold), review_share, correction)
        console.print(f"reviewed labels per condition, the least sure {review_share:.0%} taking the reference label "
                      f"(fast part corrected with {correction.source} within its band):", soft_wrap=True)
        console.print(frame_table(reviewed, key=CONDITION_KEY))
        console.print(f"reviewed 95% intervals cover the reference rate in {int(reviewed.covers.sum())} of {len(reviewed)} conditions")
    kept = [k for k, v in enumerate(verdicts) if v.scored and v.label is not None]
    judged = [(verdicts[k], references[k]) for k in kept]
    margins = [stored_margin(v.raw) for v, _ in judged]
    if judged and all(m is not None for m in margins):
        console.print("agreement if the least sure turns are labelled by hand (replay --uncertain-first):", soft_wrap=True)
        curve = hand_labelling_curve([v.label for v, _ in judged], [r for _, r in judged], margins)
        console.print(frame_table(curve, float_format="{:.3f}", key=1))
        if review_judge is not None:
            _print_reviewer_curve(review_judge, reviewer, [rows[k][0] for k in kept], judged, margins, reviewer_upto)
    elif review_judge is not None:
        fail(f"--reviewer needs a fast judge that stores its margin (--judge learned), not {judge}")
    rates = error_rates(verdicts, references, str(gold))
    console.print(f"unscored={result.unscored} binary_kappa={result.binary_kappa:.4f} "
                  f"sensitivity={rates.sensitivity:.3f} specificity={rates.specificity:.3f}")
    if save_error_rates is not None:
        rates.save(save_error_rates, judge=resolved.spec.name)
        console.print(f"wrote the error counts to {save_error_rates}")
    if record:
        _record(resolved, gold, result, model)
    typer.echo(result.summary_line())


def _print_reviewer_curve(review_judge, name: str, items: list, judged: list, margins: list[float], upto: float) -> None:
    """Run the reviewer on the least sure `upto` share of the judged turns and print the agreement curve with its labels."""
    from testbed.analysis.judge_quality.judge_eval import HAND_SHARES, least_sure_order, reviewer_curve, run_judge

    chosen = least_sure_order(margins)[:round(upto * len(judged))]
    say(f"reviewing the least sure {len(chosen)} turns ({upto:.0%}) with {name}...")
    try:
        reviews = asyncio.run(run_judge(review_judge, [items[i] for i in chosen]))
    except SpecError as exc:
        fail(str(exc))
    reviewed = {i: (v.label if v.scored else None) for i, v in zip(chosen, reviews)}
    curve = reviewer_curve([v.label for v, _ in judged], [r for _, r in judged], margins, reviewed,
                           tuple(s for s in HAND_SHARES if s <= upto + 1e-9))
    say(f"agreement if the least sure turns take {name}'s label (its unscored verdicts keep the fast label):")
    console.print(frame_table(curve, float_format="{:.3f}", key=1))


def _record(resolved, gold: Path, result, model: str | None) -> None:
    from testbed.judges.evaluations import record_evaluation
    from testbed.judges.runner import identity_of

    try:
        figure = record_evaluation(identity_of(resolved), gold, n=result.n, kappa=result.kappa if result.labels is not None else None,
                                   followup_f1=result.f1_followup, unscored=result.unscored, agent=model)
    except OSError as exc:
        fail(f"could not record the evaluation: {exc}")
    console.print(f"recorded {figure.judge} on {gold} (sha256 {figure.sha256}) as measured figures", soft_wrap=True)


@app.command("import-labels")
def import_labels(
    run_id: Annotated[str, typer.Argument(help="run id")],
    labels: Annotated[Path, typer.Argument(help="JSONL lines {episode_id, turn_index, label}", exists=True, dir_okay=False)],
    annotator: Annotated[str, typer.Option(help="who labelled (stored as human:<annotator>)")],
    store: StoreOpt = None,
) -> None:
    """Store human labels for a run's user turns, to compare judges against with `agree --b human:<annotator>`."""
    from testbed.judges.human_labels import LabelFileError, import_human_labels

    given_name(annotator, "--annotator")
    db = open_store(store)
    try:
        stored = import_human_labels(db, run_id, labels, annotator)
    except (StoreError, SpecError, LabelFileError) as exc:
        fail(str(exc))
    console.print(f"stored {stored.count} labels by {stored.identity.judge}:{annotator} on run {stored.run_id}")
