"""`testbed recover STORE OUT`: copy what a damaged store still holds into a new store, table by table."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated

import typer

from testbed.cli.app import app, console, fail, say
from testbed.cli.output import output_folder
from testbed.fitted_table import FitColumn, FittedTable


@app.command()
def recover(
    store: Annotated[Path, typer.Argument(help="the damaged store file")],
    out: Annotated[Path, typer.Argument(help="where the copy goes: a new file (an existing one is never overwritten)")],
) -> None:
    """Copy every row that can still be read from a damaged store into a new store, and say per table how many
    were kept and lost. Uses Python's sqlite3 alone, so it works where the sqlite3 shell's `.recover` does not."""
    from testbed.store.recovery import RecoveryError, recover as copy_readable

    output_folder(out.parent)
    try:
        result = copy_readable(store, out)
    except RecoveryError as exc:
        fail(str(exc))
    except (OSError, sqlite3.Error) as exc:
        fail(f"cannot write the copy {out} ({getattr(exc, 'strerror', None) or exc}): give a path in a folder you can write")
    table = FittedTable((FitColumn(column, justify="left" if column in ("table", "unreadable rowids") else "right")
                         for column in ("table", "rows kept", "rows lost", "unreadable rowids")), title=f"recovered {store} into {out}")
    for t in result.tables:
        gaps = t.unreadable or ", ".join(_span(lo, hi) for lo, hi in t.skipped[:5])
        gaps += " …" if len(t.skipped) > 5 else ""
        gaps += f"{'; ' if gaps else ''}{t.rejected} refused by the schema" if t.rejected else ""
        table.add_row(t.name, str(t.kept), "unknown" if t.lost is None else str(t.lost), gaps)
    console.print(table)
    for problem in result.index_problems:
        say(("note:", "yellow"), f" {problem}: the copy lacks this index")
    lost = any(t.lost != 0 for t in result.tables)
    say(f"{'some rows were lost; ' if lost else 'every row was read; '}check the copy with `testbed runs --store {out}` and "
        f"use it with --store {out}; keep the damaged file until the copy is checked. A resumed run redoes only the "
        "episodes the copy lacks (one kept without some of its messages counts as finished).")


def _span(low: int, high: int | None) -> str:
    """A skipped rowid range as shown: one rowid, a range, or from a rowid to the table's unreadable end."""
    if high is None:
        return f"{low} to the end"
    return str(low) if high == low else f"{low}–{high}"
