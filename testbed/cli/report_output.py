"""What `testbed report` (and `testbed run` at its end) prints: a run's report per condition group with its judge
labels, and the tables beside it (judge figures, perturbations, realism, replicas, the reasons episodes failed)."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.table import Table

from testbed.cli.shell import console, err_console, fail, say
from testbed.store.labels import REVIEWED
from testbed.store.sqlite_store import StoreError


def report_judge(db, run_id: str, selector: str | None):
    """The labeller whose verdicts the report shows: the one named, else reviewed labels, the default judge's or
    `local`'s, whichever comes first (`fast_identity`, the rule every other face follows), else none."""
    from testbed.store.labels import fast_identity, resolve_identity

    if selector == "none":
        return None
    if selector is None:
        return fast_identity(db, run_id)
    return resolve_identity(db, run_id, selector)


def print_report(db, run_id: str, fmt: str, judge: str | None = None, correct_with: Path | None = None,
                 errored: str | None = None) -> None:
    """Print a run's report in `fmt` (with the tables beside it for `table`), or fail with one clear message."""
    from testbed.analysis.frames import shared_reads
    from testbed.analysis.reports.render import as_rich_tables, render
    from testbed.analysis.reports.probe import ReportOptionError, report_frame

    try:
        meta = db.run(run_id)
        who = report_judge(db, meta["run_id"], judge)
    except StoreError as exc:
        fail(str(exc))
    counts = db.episode_counts(meta["run_id"])
    if not any(counts.values()):
        fail(f"run {meta['run_id']} has no episodes to report: it planned {meta['planned_episodes']} and none has finished yet "
             f"(status {meta['status']}: it was stopped, or is still starting). Run the same `testbed run` again to resume it.", 1)
    rates = error_rates_file(correct_with) if correct_with is not None else None
    if rates is not None and who is None:
        fail(f"--correct-with needs judge labels on run {meta['run_id']}: run `testbed judge` first, or name one with --judge")
    if rates is not None and who.judge == REVIEWED and not rates.turns:
        fail(f"--correct-with {correct_with}: these error counts hold no per-turn margins, so the fast judge's errors within "
             f"the band it decided for {who} cannot be measured; use the trainer's judges/models/learned-3.cv-error-rates.<kind>.json for this kind of run, or re-save "
             "them with `testbed eval-judge GOLD --judge learned --save-error-rates FILE`")
    if rates is not None and rates.measured_on_kind not in (None, meta["kind"]):
        say((f"note: --correct-with {correct_with} holds the judge's errors on {rates.measured_on_kind} turns, and run "
             f"{meta['run_id']} has {meta['kind']} turns; its errors differ by kind, so use the counts for {meta['kind']} "
             "turns where there are some", "yellow"), to=err_console)
    with shared_reads():
        try:
            frame = report_frame(db, meta["run_id"], who, rates, errored_as=errored)
        except ReportOptionError as exc:
            fail(f"--errored: {exc}; run {meta['run_id']} is a {meta['kind']} run, and only τ² runs have rewards")
        if fmt == "table":
            labelled = _labels_note(who, counts, db.error_reasons(meta["run_id"], limit=2))
            if rates is not None and who.judge == REVIEWED:
                labelled += f"; the fast judge's part corrected for its errors on {rates.source} within the band it decided"
            elif rates is not None:
                labelled += f"; corrected for its errors on {rates.source} (se {rates.sensitivity:.2f}, sp {rates.specificity:.2f})"
            for table in as_rich_tables(frame, f"{meta['run_id']} ({meta['status']}{labelled})"):
                console.print(table)
            if who is not None:
                _print_judge_figures(db, meta["run_id"], who)
            print_perturbation_effects(db, meta["run_id"], who)
            print_realism(db, meta["run_id"], who, fmt)
            print_replica_counts(db, meta["run_id"])
            for reason, n in db.error_reasons(meta["run_id"]):
                say((f"{n} episode(s) failed:", "red"), " ", reason)
        else:
            sys.stdout.write(render(frame, fmt) + "\n")
            if fmt == "markdown":
                print_realism(db, meta["run_id"], who, fmt)


def _labels_note(who, counts: dict[str, int], reasons: list[tuple[str, int]]) -> str:
    """What the report's title says about labels: whose they are, that none are there yet, or, when every episode
    errored, that there is nothing to judge and why (judging such a run labels nothing, so `testbed judge` is no fix)."""
    if counts.get("error") and not counts.get("done"):
        n = counts["error"]
        reason = ((reasons[0][0] if reasons else None) or "no reason recorded")[:160]
        more = "; the others are listed below" if len(reasons) > 1 else ""
        return f"; every episode errored: {n} of {n}; nothing to judge; the reasons: {reason}{more}"
    return f"; labels by {who}" if who else "; no judge labels (run `testbed judge`)"


def _print_judge_figures(db, run_id: str, who) -> None:
    """What share each stage of reviewed labels decided, and the measured figures behind each judge the labels came from."""
    from testbed.judges.evaluations import figures_line
    from testbed.judges.review import decided_line, stages
    from testbed.store.labels import HUMAN

    if who.judge == REVIEWED:
        say(decided_line(db, run_id, who))
    for stage in stages(who):
        say("  " + (f"{stage}: a person, taken as right" if stage.judge == HUMAN else figures_line(stage)))


def print_realism(db, run_id: str, who, fmt: str) -> None:
    """The realism table, when the run holds human-reference episodes (a run over real conversations)."""
    from testbed.analysis.realism.render import as_markdown, as_rich
    from testbed.analysis.realism.runs import run_realism

    realism = run_realism(db, run_id, who, closeness=True)
    if realism.empty:
        return
    if fmt == "markdown":
        sys.stdout.write("\n" + as_markdown(realism) + "\n")
    else:
        console.print(as_rich(realism))


def print_replica_counts(db, run_id: str) -> None:
    """Requests per replica (served, handed on to another), when the run spread an agent over several servers."""
    from testbed.store.replica_counts import replica_counts

    counts = replica_counts(db, run_id)
    if not counts:
        return
    table = Table(title="replicas: requests served, and handed on after a failure")
    for col in ("agent", "replica", "served", "retried", "state"):
        table.add_column(col)
    for c in counts:
        table.add_row(c.agent, c.url, str(c.served), str(c.retried), f"taken out: {c.out_reason}" if c.out_reason else "live")
    console.print(table)


def print_perturbation_effects(db, run_id: str, who) -> None:
    """The paired perturbation table, when the run has perturbed episodes (only a probe's can be)."""
    from testbed.analysis.perturbation import perturbation_effects

    effects = perturbation_effects(db, run_id, who)
    if effects.empty:
        return
    table = Table(title="perturbations: the same answer, perturbed (pairs with the unperturbed episode)")
    for col in ("perturbation", "mode", "T", "pairs", "user turn changed (95% CI)", "follow-up none → perturbed", "change"):
        table.add_column(col)
    for r in effects.itertuples(index=False):
        rates = "n/a" if r.judged_pairs == 0 else f"{r.followup_none:.1%} → {r.followup_perturbed:.1%}"
        change = "n/a" if r.judged_pairs == 0 else f"{r.followup_change:+.1%}"
        table.add_row(r.perturbation, r.user_mode, f"{r.temperature:g}", str(r.pairs),
                      f"{r.changed:.1%} ({r.changed_lo:.0%}–{r.changed_hi:.0%})", rates, change)
    console.print(table)


def error_rates_file(path: Path):
    """Error counts written by `eval-judge --save-error-rates` (or the trainer), refused clearly when malformed."""
    from testbed.analysis.judge_quality.correction import BadErrorRates, JudgeErrorRates

    try:
        return JudgeErrorRates.load(path)
    except BadErrorRates as exc:
        fail(f"--correct-with {exc}")
