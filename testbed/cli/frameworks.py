"""`testbed compare` and `testbed wire`: the same scenario under several frameworks, and what each sent."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from testbed.cli.app import KEPT, StoreOpt, app, console, err_console, fail, open_store, run_async, say, split_list
from testbed.cli.choices import framework_names, judge_help
from testbed.cli.given_names import given_judge
from testbed.cli.shell import Terminated
from testbed.fitted_table import FitColumn, FittedTable
from testbed.specs.errors import SpecError
from testbed.specs.registries import FRAMEWORKS
from testbed.store.labels import DEFAULT_JUDGE
from testbed.store.sqlite_store import StoreError

COMPARE_FORMATS = ("table", "markdown", "csv", "json")
FULL_HINT = "--full shows it whole"
"""How `testbed wire` says a long message or body can be printed whole."""
EVERY_FRAMEWORK = framework_names(",")
"""Every registered framework, in registration order (`--frameworks` defaults to those that run the scenario's kind)."""


def _frameworks(names: str) -> list[str]:
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    if not chosen:
        fail("--frameworks is empty: name at least one, e.g. --frameworks native,autogen")
    if len(set(chosen)) != len(chosen):
        fail(f"--frameworks names one twice ({names}): name each once")
    for name in chosen:
        try:
            FRAMEWORKS.get(name)
        except LookupError as exc:
            fail(str(exc))
    return chosen


@app.command()
def compare(
    spec: Annotated[str, typer.Argument(help="scenario spec: a YAML path or a built-in name (e.g. dialogue-gsm8k)")],
    frameworks: Annotated[Optional[str], typer.Option("--frameworks", help=f"comma-separated, of {EVERY_FRAMEWORK} (default: every one that runs the scenario's kind)")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="number of dataset items")] = None,
    user_modes: Annotated[Optional[str], typer.Option("--user-modes", help="comma-separated user modes (default: those every framework compared can run)")] = None,
    assistant: Annotated[Optional[str], typer.Option(help="agent spec for the assistant, replacing the scenario's")] = None,
    user: Annotated[Optional[str], typer.Option(help="agent spec for the simulated user, replacing the scenario's")] = None,
    judge: Annotated[str, typer.Option("--judge", "-j", help=judge_help("who labels every user turn"))] = DEFAULT_JUDGE,
    format: Annotated[str, typer.Option("--format", "-f", help="table | markdown | csv | json (their shape: below)")] = "table",
    store: StoreOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bars")] = False,
    agent: Annotated[Optional[str], typer.Option("--agent", help="comma-separated agent specs of your own agents (backend python or http-agent): each a row `your agent: NAME`, run natively")] = None,
    simulator_gap: Annotated[bool, typer.Option("--simulator-gap", help="τ²: also run each native row's assistant with the scripted user, and show the reward its model user lost on the same tasks")] = False,
) -> None:
    """Run a scenario once per framework into one store (resumable), label every user turn with one judge,
    and print the frameworks side by side, paired with the baseline framework on the same episodes.

    --format json prints one object: frameworks (a record per framework, every column), requests (the episode and
    each framework's request shapes) and, over real users, realism (each framework's realism table: title,
    weak_reference, rows, real_users). csv has the frameworks' records; markdown every table the terminal shows."""
    from testbed.running.comparison import FrameworkFailed, load_comparable, preflight_frameworks, run_comparison
    from testbed.frameworks.base import FrameworkNotInstalled, frameworks_for
    from testbed.specs.loader import load_agent, load_scenario
    from testbed.judges.specs import load_judge

    given_judge(judge, "--judge")
    if format not in COMPARE_FORMATS:
        fail(f"unknown --format {format!r}; use one of {', '.join(COMPARE_FORMATS)}")
    out = console if format == "table" else err_console
    try:
        chosen = _frameworks(frameworks) if frameworks is not None else frameworks_for(load_scenario(spec).spec.kind)
        scenario, left_out = load_comparable(spec, chosen, assistant=assistant, user=user, limit=limit, user_modes=split_list(user_modes))
        if left_out:
            say(f"user mode(s) {', '.join(left_out)} left out: not every framework compared can run them "
                f"(comparing {', '.join(scenario.spec.user_modes)}; pass --user-modes to choose)", to=out)
        mine = [load_agent(path) for path in split_list(agent) or []]
        preflight_frameworks(scenario, chosen, mine)
        labeller = load_judge(judge)
    except (SpecError, FileNotFoundError, FrameworkNotInstalled) as exc:
        fail(str(exc))
    db = open_store(store, create=True)
    try:
        comparison = run_async(run_comparison(scenario, db, chosen, labeller, console=out, show_progress=not quiet,
                                              on_run=lambda done: _say_run(done, out), agents=mine, simulator_gap=simulator_gap))
    except (SpecError, StoreError) as exc:
        fail(str(exc))
    except FrameworkFailed as exc:
        fail(f"{exc.framework}: {exc.reason}\nThe comparison stopped; " + KEPT.format(path=db.path))
    except (KeyboardInterrupt, Terminated):
        fail("stopped; " + KEPT.format(path=db.path), 130)
    _print_comparison(comparison, format, db)
    if comparison.incomplete:
        raise typer.Exit(1)


def _say_run(done, out) -> None:
    summary, labelled = done.summary, done.labelled
    say(f"{done.framework}: run ", (summary.run_id, "bold"), f" {summary.done}/{summary.planned} episodes done, {summary.errors} errors; "
        f"{labelled.scored} new user turns labelled by {labelled.identity}"
        + (f"; tracebacks and the framework's own log in {summary.log}" if summary.log else ""), to=out)


def _print_comparison(comparison, fmt: str, db) -> None:
    from testbed.analysis.frames import shared_reads

    with shared_reads(*comparison.frames.values()):
        _print_tables(comparison, fmt, db)


def _print_tables(comparison, fmt: str, db) -> None:
    from testbed.analysis.reports.compare_render import comparison_tables, comparison_text

    frame, shapes, episode = comparison.frame, comparison.shapes, comparison.episode
    if fmt == "table":
        who = ", ".join(sorted({str(i) for i in comparison.identities.values() if i is not None})) or "no judge"
        for table in comparison_tables(frame, shapes, episode, f"{comparison.scenario}: frameworks compared (labels by {who})"):
            console.print(table)
    else:
        realism = _realism_by_framework(comparison, db) if fmt == "json" else None
        sys.stdout.write(comparison_text(frame, shapes, episode, fmt, realism) + "\n")
    if fmt in ("table", "markdown"):
        _print_realism(comparison, fmt, db)


def _realism_by_framework(comparison, db) -> dict:
    """Each framework's realism table as JSON records (`testbed.analysis.realism.render.realism_records`), for the
    frameworks whose runs hold real users' turns."""
    from testbed.analysis.realism.render import realism_records
    from testbed.analysis.realism.runs import run_realism

    shown = {}
    for framework, run_id in comparison.run_ids.items():
        realism = run_realism(db, run_id, comparison.identities.get(framework), closeness=True)
        if not realism.empty:
            shown[framework] = realism_records(realism)
    return shown


def _print_realism(comparison, fmt: str, db) -> None:
    """Each framework's simulated users against the real users, when the compared scenario runs over real contexts."""
    from testbed.analysis.realism.render import as_markdown, as_rich
    from testbed.analysis.realism.runs import run_realism

    for framework, run_id in comparison.run_ids.items():
        realism = run_realism(db, run_id, comparison.identities.get(framework), closeness=True)
        if realism.empty:
            continue
        if fmt == "markdown":
            sys.stdout.write(f"\n**{framework}**\n\n" + as_markdown(realism) + "\n")
        else:
            table = as_rich(realism)
            table.title = f"{framework}: {table.title}"
            console.print(table)


@app.command()
def wire(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    episode: Annotated[str, typer.Argument(help="episode id (a unique prefix is enough)")],
    turn: Annotated[Optional[int], typer.Option("--turn", "-t", help="only the requests that produced this turn index")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="text | json (json holds every body whole)")] = "text",
    full: Annotated[bool, typer.Option("--full", help="print every message and reply whole (one over 8,000 characters is otherwise shown in part: its start, its size, its end)")] = False,
    store: StoreOpt = None,
) -> None:
    """Print the exact requests a run's framework sent for an episode (or one turn): messages with roles and names,
    sampling, the reply, tokens and latency, as the wire recorder saw them; a long message or reply in part unless --full."""
    if format not in ("text", "json"):
        fail(f"unknown --format {format!r}; use text or json")
    db = open_store(store, readonly=True)
    try:
        run = db.run(run_id)
    except StoreError as exc:
        fail(str(exc))
    recorded = db.wire_episode_ids(run.run_id)
    episodes = [eid for eid in recorded if eid.startswith(episode)]
    if not recorded:
        fail(f"run {run.run_id} has no wire log: run it with --wire (every framework but native keeps one by default)")
    if len(episodes) != 1:
        known = ", ".join(recorded[:8])
        fail(f"episode {episode!r} {'is ambiguous' if episodes else 'has no wire log'} in run {run.run_id}; episodes with one: {known} …")
    chosen = db.wire(run.run_id, episodes[0], turn)
    if not chosen:
        turns = sorted({w.turn_index for w in db.wire(run.run_id, episodes[0]) if w.turn_index is not None})
        fail(f"no request produced turn {turn} of episode {episodes[0]}; turns with requests: {turns}")
    if format == "json":
        sys.stdout.write(json.dumps([_as_dict(w) for w in chosen], indent=2) + "\n")
        return
    say(f"run {run.run_id} ({run.framework}), episode {episodes[0]}: {len(chosen)} request(s)")
    for w in chosen:
        _print_record(w, full)


def _as_dict(w) -> dict:
    from dataclasses import asdict

    return asdict(w)


def _shown(value, full: bool):
    """A message's content or a body as a table cell, in part when it is long (`testbed.long_text`) unless `full`,
    and laid out in pieces when it is long and shown whole."""
    from rich.console import Group

    from testbed.long_text import HEAD_CHARS, LONG_CHARS, text_blocks

    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= LONG_CHARS else Group(*text_blocks(text, FULL_HINT, head=None if full else HEAD_CHARS))


def _print_record(w, full: bool) -> None:
    from testbed.long_text import shown_text

    tokens = f"{w.prompt_tokens} prompt + {w.completion_tokens} completion tokens" if w.prompt_tokens is not None else "no usage"
    say((f"#{w.seq} {w.role} → turn {w.turn_index}", "bold"), f": HTTP {w.status}, {w.latency_s * 1000:.0f} ms, {tokens}")
    table = FittedTable((FitColumn("#", justify="right"), "role", "name", FitColumn("content", fold=True)), show_lines=True)
    for i, m in enumerate(w.messages):
        table.add_row(str(i), _shown(m.get("role"), full), _shown(m.get("name") or "", full), _shown(m.get("content"), full))
    table.add_row("→", "reply", "", _shown(w.reply if w.reply is not None else w.response, full))
    console.print(table)
    sampling = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(w.sampling.items())) or "none"
    console.print("sampling sent: " + (sampling if full else shown_text(sampling, FULL_HINT)), markup=False)
