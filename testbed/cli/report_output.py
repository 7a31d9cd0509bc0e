"""What `testbed report` (and `testbed run` at its end) prints: a run's report per condition group with its judge
labels, and the tables beside it (judge figures, perturbations, realism, replicas, the reasons episodes failed)."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.padding import Padding
from rich.text import Text

from testbed.cli.shell import console, err_console, fail, say
from testbed.fitted_table import FittedTable
from testbed.redaction import redact
from testbed.store.labels import REVIEWED
from testbed.store.sqlite_store import StoreError
from testbed.terminal_text import neutralised


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
    from testbed.analysis.reports.render import as_rich_tables
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
             f"the band it decided for {who} cannot be measured; use the trainer's judges/models/learned-6.cv-error-rates.<kind>.json for this kind of run, or re-save "
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
            print_beside(db, meta["run_id"], who, rates)
            for reason, n in db.error_reasons(meta["run_id"]):
                note((f"{n} episode(s) failed:", "red"), " ", reason)
        else:
            print_formatted(db, meta["run_id"], who, frame, fmt, rates)


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
        note(decided_line(db, run_id, who))
    for stage in stages(who):
        note(f"{stage}: a person, taken as right" if stage.judge == HUMAN else figures_line(stage), indent=2)


def note(*parts: str | tuple[str, str], indent: int = 0) -> None:
    """Print a line of plain and (text, style) parts like `say`, wrapped at the terminal's width (under `indent`
    spaces) so a long judge figure or error reason reads at 80 columns too."""
    shown = ((neutralised(p[0]), p[1]) if isinstance(p, tuple) else neutralised(redact(p)) for p in parts)
    console.print(Padding(Text.assemble(*shown), (0, 0, 0, indent), expand=False))


def print_realism(db, run_id: str, who, fmt: str, rates=None) -> None:
    """The realism table, when the run holds human-reference episodes (a run over real conversations), its follow-up
    rates corrected with `rates` (the judge's error counts) when given."""
    from testbed.analysis.realism.render import as_markdown, as_rich

    realism = _realism(db, run_id, who, rates)
    if realism.empty:
        return
    if fmt == "markdown":
        sys.stdout.write("\n" + as_markdown(realism) + "\n")
    else:
        console.print(as_rich(realism))


def _realism(db, run_id: str, who, rates=None):
    from testbed.analysis.realism.runs import run_realism

    return run_realism(db, run_id, who, closeness=True, correction=rates)


def print_formatted(db, run_id: str, who, frame, fmt: str, rates=None) -> None:
    """The report in Markdown, CSV or JSON with every table the terminal shows beside it: Markdown adds them as tables
    under the report's (perturbations, realism, replicas) and lists the reasons episodes failed; CSV and JSON join the
    perturbation and realism tables and each condition's error reasons onto the report's rows
    (`testbed.analysis.reports.beside`); the replicas, a run's and not a condition's, are in Markdown and the terminal."""
    from testbed.analysis.perturbation import perturbation_effects
    from testbed.analysis.reports.beside import with_error_reasons, with_perturbations, with_realism
    from testbed.analysis.reports.render import render
    from testbed.store.frames import episodes_df

    effects = perturbation_effects(db, run_id, who)
    if fmt != "markdown":
        joined = with_perturbations(with_realism(frame, _realism(db, run_id, who, rates)), effects)
        sys.stdout.write(render(with_error_reasons(joined, episodes_df(db, run_id, exact=True)), fmt) + "\n")
        return
    sys.stdout.write(render(frame, fmt) + "\n")
    perturbations = perturbation_table(effects)
    if perturbations is not None:
        sys.stdout.write("\n" + perturbations.as_markdown() + "\n")
    print_realism(db, run_id, who, fmt, rates)
    replicas = replica_table(db, run_id)
    if replicas is not None:
        sys.stdout.write("\n" + replicas.as_markdown() + "\n")
    reasons = db.error_reasons(run_id)
    if reasons:
        lines = [f"- {n} episode(s) failed: {reason}" for reason, n in reasons]
        sys.stdout.write("\n### episodes that failed\n\n" + neutralised(redact("\n".join(lines))) + "\n")


def replica_table(db, run_id: str) -> FittedTable | None:
    """Requests per replica (served, handed on to another), when the run spread an agent over several servers."""
    from testbed.store.replica_counts import replica_counts

    counts = replica_counts(db, run_id)
    if not counts:
        return None
    table = FittedTable(("agent", "replica", "served", "retried", "state"), title="replicas: requests served, and handed on after a failure",
                        key=2)
    for c in counts:
        table.add_row(c.agent, c.url, str(c.served), str(c.retried), f"taken out: {c.out_reason}" if c.out_reason else "live")
    return table


def perturbation_table(effects) -> FittedTable | None:
    """The paired perturbation table, when the run has perturbed episodes (only a probe's can be)."""
    if effects.empty:
        return None
    table = FittedTable(("perturbation", "mode", "T", "pairs", "user turn changed (95% CI)", "follow-up none → perturbed", "change"),
                        title="perturbations: the same answer, perturbed (pairs with the unperturbed episode)", key=3)
    for r in effects.itertuples(index=False):
        rates = "n/a" if r.judged_pairs == 0 else f"{r.followup_none:.1%} → {r.followup_perturbed:.1%}"
        change = "n/a" if r.judged_pairs == 0 else f"{r.followup_change:+.1%}"
        table.add_row(r.perturbation, r.user_mode, f"{r.temperature:g}", str(r.pairs),
                      f"{r.changed:.1%} ({r.changed_lo:.0%}–{r.changed_hi:.0%})", rates, change)
    return table


def print_beside(db, run_id: str, who, rates=None) -> None:
    """The tables under the report, each when the run has one: perturbations, realism (its follow-up rates corrected
    with `rates` when given), replicas."""
    from testbed.analysis.perturbation import perturbation_effects

    perturbations = perturbation_table(perturbation_effects(db, run_id, who))
    if perturbations is not None:
        console.print(perturbations)
    print_realism(db, run_id, who, "table", rates)
    replicas = replica_table(db, run_id)
    if replicas is not None:
        console.print(replicas)


def error_rates_file(path: Path):
    """Error counts written by `eval-judge --save-error-rates` (or the trainer), refused clearly when malformed."""
    from testbed.analysis.judge_quality.correction import BadErrorRates, JudgeErrorRates

    try:
        return JudgeErrorRates.load(path)
    except BadErrorRates as exc:
        fail(f"--correct-with {exc}")
