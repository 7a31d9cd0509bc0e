"""`testbed export`: SFT or DPO JSONL for user-turn generation from a judged run, with a data card beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, err_console, fail, open_store, say
from testbed.cli.output import output_folder
from testbed.cli.shell import require_user_turns
from testbed.store.sqlite_store import StoreError


def _where(terms: list[str] | None) -> tuple[tuple[str, str], ...]:
    out = []
    for term in terms or []:
        column, eq, value = term.partition("=")
        if not eq or not column or not value:
            fail(f"--where {term!r} is not COLUMN=VALUE (e.g. --where user_mode=instructed)")
        out.append((column, value))
    return tuple(out)


@app.command()
def export(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    kind: Annotated[str, typer.Option("--as", help="sft: conversations ending in a positive user turn; dpo: positive vs failure pairs")],
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="whose labels decide: a judge name, name:model, name@version, human:NAME (default: reviewed, else learned, else local labels)")] = None,
    out: Annotated[Path, typer.Option("--out", help="folder for the JSONL and its data card")] = Path("data"),
    label: Annotated[Optional[list[str]], typer.Option("--label", help="positive labels (repeat; default genuine_followup)")] = None,
    failure: Annotated[Optional[list[str]], typer.Option("--failure", help="DPO failure labels (repeat; default every other label)")] = None,
    user_model: Annotated[Optional[str], typer.Option(help="keep turns whose user model contains this")] = None,
    where: Annotated[Optional[list[str]], typer.Option("--where", help="COLUMN=VALUE on episode conditions or item_id (repeat)")] = None,
    include_canary: Annotated[bool, typer.Option("--include-canary", help="export GPQA / HealthBench text despite its canary")] = False,
    store: StoreOpt = None,
) -> None:
    """Write `<out>/<run>.<kind>.jsonl` (loadable with datasets.load_dataset("json", ...)) and `<run>.<kind>.card.md`."""
    from testbed.datasets.catalog import carries_canary
    from testbed.export.training import ExportError, ExportFilter, training_rows
    from testbed.export.writing import write_export
    from testbed.cli.given_names import given_judge
    from testbed.store.labels import labeller_of

    given_judge(judge, "--judge")
    db = open_store(store, readonly=True)
    chosen = ExportFilter(tuple(label or ("genuine_followup",)), tuple(failure) if failure else None, user_model, _where(where),
                          include_canary)
    try:
        run = db.run(run_id).run_id
        require_user_turns(db, run)
        who = labeller_of(db, run, judge)
        result = training_rows(db, run, kind, who, chosen)
    except (StoreError, ExportError) as exc:
        fail(str(exc))
    if not result.rows:
        fail(f"no {kind} rows: of {result.counts['judged_turns']} turns {who} scored in run {run} (after filters), "
             f"{result.counts['positive_turns']} are positive and {result.counts['failure_turns']} failures"
             + ("; DPO needs a positive and a failure that answer the same context" if kind == "dpo" else ""), 1)
    if include_canary and any(carries_canary(d) for d in result.datasets):
        err_console.print("warning: this export holds benchmark text with a canary string; keep it out of public training corpora")
    data, _ = write_export(result, chosen, output_folder(out))
    say(f"wrote {len(result.rows)} {kind} rows to {data} (judge {who}; {result.counts['positive_turns']} positive, "
        f"{result.counts['failure_turns']} failure turns of {result.counts['judged_turns']} judged) and its data card")
