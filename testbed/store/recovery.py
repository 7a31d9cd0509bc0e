"""Copy what can still be read of a damaged store into a new file, with Python's own sqlite3.

The sqlite3 shell's `.recover` is not something the testbed ships, and the one on many machines (3.40.1) fails on
every testbed store with "SQL logic error", leaving an empty copy. This copies the schema from `sqlite_master`, then
each table's rows in rowid order. A read that meets a damaged page ("database disk image is malformed") keeps the
rows read before it, skips ahead past the damaged rowids (doubling the step until a read succeeds, then narrowing
back to the first readable rowid), and goes on: one bad page costs the rows on it, not the rest of the table. Indexes are built afterwards from the rows
kept. The copy is written beside the target under a temporary name and renamed into place at the end, so a
target that exists is never overwritten and an interrupted recovery leaves no half copy under the target's name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from testbed.store.schema import SCHEMA_VERSION

CHUNK_ROWS = 512
"""Rows read per query: small enough that a damaged page stops one short read, large enough to copy quickly."""
LAST_ROWID = 2**63 - 1


class RecoveryError(RuntimeError):
    """The copy cannot be made at all (the target exists, the source is no SQLite file): the one-line reason."""


@dataclass
class TableRecovery:
    """What became of one table: rows copied, rows lost, and the rowid ranges that could not be read."""

    name: str
    kept: int = 0
    held: int | None = None
    """How many rows the damaged table holds, when SQLite can still count them (through an index that is intact)."""
    skipped: list[tuple[int, int | None]] = field(default_factory=list)
    """Rowid ranges that could not be read; an open end (None) runs to the end of the table."""
    rejected: int = 0
    """Rows read but refused by the copy's constraints (damage that still parsed)."""
    unreadable: str | None = None
    """Why nothing of the table could be read, when that is so."""

    @property
    def lost(self) -> int | None:
        """Rows lost: counted where the table's rows can be counted, else at most the rowids in the skipped ranges
        (rowids of a testbed table are dense); None when neither is known (the table's end could not be read)."""
        if self.held is not None:
            return max(self.held - self.kept, 0)
        if self.unreadable is not None or any(hi is None for _, hi in self.skipped):
            return None
        return sum(hi - lo + 1 for lo, hi in self.skipped) + self.rejected


@dataclass
class Recovery:
    """The outcome of `recover`: the copy's path and what became of each table."""

    out: Path
    tables: list[TableRecovery]
    index_problems: list[str] = field(default_factory=list)


def recover(source: Path | str, out: Path | str) -> Recovery:
    """Copy every readable row of the store at `source` into a new store at `out` (which must not exist)."""
    source, out = Path(source), Path(out)
    if not source.is_file():
        raise RecoveryError(f"no store at {source}: give the path of the damaged store file")
    if out.exists():
        raise RecoveryError(f"{out} exists: recovery never overwrites a file; give a new path for the copy")
    if out.resolve() == source.resolve():
        raise RecoveryError("the copy must go to another file than the damaged store")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".recovering")
    for leftover in (partial, Path(f"{partial}-journal")):
        leftover.unlink(missing_ok=True)
    try:
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise RecoveryError(f"cannot open {source} ({exc}): it is no SQLite file this can read") from None
    dst = sqlite3.connect(partial, isolation_level=None)
    try:
        dst.execute("PRAGMA journal_mode=MEMORY")
        dst.execute("PRAGMA synchronous=OFF")
        dst.execute("BEGIN")
        tables, indexes = _schema(src, source)
        for _, sql in tables:
            dst.execute(sql)
        result = Recovery(out, [])
        result.tables.extend(_copy_table(src, dst, name) for name, _ in tables)
        for name, sql in indexes:
            try:
                dst.execute(sql)
            except sqlite3.Error as exc:
                result.index_problems.append(f"index {name}: {exc}")
        if all(t.unreadable for t in result.tables):
            raise RecoveryError(f"no table of {source} can be read (SQLite: {result.tables[0].unreadable}): nothing to copy")
        _keep_schema_version(dst, {n for n, _ in tables})
        dst.execute("COMMIT")
    except BaseException:
        dst.close()
        src.close()
        partial.unlink(missing_ok=True)
        raise
    dst.close()
    src.close()
    _move_into_place(partial, out)
    return result


def _move_into_place(partial: Path, out: Path) -> None:
    """Give the finished copy its name, never replacing a file that appeared there meanwhile (a hard link fails
    then; where the file system has no hard links, the name is checked just before the rename)."""
    try:
        os.link(partial, out)
    except FileExistsError:
        raise RecoveryError(f"{out} appeared while recovering: recovery never overwrites a file; the copy is left at "
                            f"{partial}") from None
    except OSError:
        if out.exists():
            raise RecoveryError(f"{out} appeared while recovering: recovery never overwrites a file; the copy is left at "
                                f"{partial}") from None
        os.rename(partial, out)
        return
    partial.unlink()


def _schema(src: sqlite3.Connection, source: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(tables, indexes) of the store as (name, CREATE statement), from its sqlite_master; RecoveryError when that
    cannot be read (SQLite then cannot find any table's rows either)."""
    try:
        rows = src.execute("SELECT type, name, sql FROM sqlite_master "
                           "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'").fetchall()
    except sqlite3.DatabaseError as exc:
        raise RecoveryError(f"nothing in {source} can be read (SQLite: {exc}): its first page, which holds the schema, is "
                            "damaged, or it is no testbed store") from None
    tables = [(name, sql) for kind, name, sql in rows if kind == "table"]
    if not tables:
        raise RecoveryError(f"{source} holds no tables: it is no testbed store")
    return tables, [(name, sql) for kind, name, sql in rows if kind == "index"]


def _copy_table(src: sqlite3.Connection, dst: sqlite3.Connection, name: str) -> TableRecovery:
    """Copy `name` in rowid order, skipping what cannot be read (see the module docstring)."""
    table = TableRecovery(name)
    quoted = '"' + name.replace('"', '""') + '"'
    try:
        columns = len(src.execute(f"SELECT * FROM {quoted} LIMIT 0").description)
    except sqlite3.DatabaseError as exc:
        table.unreadable = str(exc)
        return table
    with contextlib.suppress(sqlite3.DatabaseError):
        table.held = src.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()[0]
    read = f"SELECT rowid, * FROM {quoted} WHERE rowid >= ? ORDER BY rowid LIMIT {CHUNK_ROWS}"
    write = f"INSERT INTO {quoted} VALUES ({', '.join('?' * columns)})"
    last = -LAST_ROWID
    while True:
        rows, failed = _read_until_damage(src, read, last + 1)
        _write_rows(dst, write, [row[1:] for row in rows], table)
        if rows:
            last = rows[-1][0]
        if failed:
            last = max(last, 0)
            resume = _first_readable_after(src, quoted, last)
            if resume is None:
                table.skipped.append((last + 1, _last_rowid(src, quoted)))
                break
            if resume > last + 1:
                table.skipped.append((last + 1, resume - 1))
            last = resume - 1
        elif len(rows) < CHUNK_ROWS:
            break
    return table


def _write_rows(dst: sqlite3.Connection, write: str, rows: list[tuple], table: TableRecovery) -> None:
    """Insert a chunk at once; when the copy's constraints refuse some row (damage that still parsed), row by row."""
    savepoint = dst.execute("SAVEPOINT chunk")
    try:
        savepoint.executemany(write, rows)
        dst.execute("RELEASE chunk")
        table.kept += len(rows)
        return
    except sqlite3.Error:
        dst.execute("ROLLBACK TO chunk")
        dst.execute("RELEASE chunk")
    for row in rows:
        try:
            dst.execute(write, row)
            table.kept += 1
        except sqlite3.Error:
            table.rejected += 1


def _last_rowid(src: sqlite3.Connection, quoted: str) -> int | None:
    """The table's largest rowid, when it can be read; else None."""
    try:
        return src.execute(f"SELECT max(rowid) FROM {quoted}").fetchone()[0]
    except sqlite3.DatabaseError:
        return None


def _read_until_damage(src: sqlite3.Connection, read: str, start: int) -> tuple[list[tuple], bool]:
    """The rows from rowid `start` on (one chunk), those read before a damaged page when there is one; and whether one was met."""
    rows: list[tuple] = []
    try:
        for row in src.execute(read, (start,)):
            rows.append(tuple(row))
    except sqlite3.DatabaseError:
        return rows, True
    return rows, False


def _first_readable_after(src: sqlite3.Connection, quoted: str, bad: int) -> int | None:
    """The smallest rowid above `bad` from which rows can be read again, or None when none can: the step doubles
    until a seek lands on a readable page, then the gap is narrowed back so that no readable row is skipped."""

    def readable_from(rowid: int) -> bool:
        try:
            src.execute(f"SELECT * FROM {quoted} WHERE rowid >= ? ORDER BY rowid LIMIT 1", (rowid,)).fetchall()
            return True
        except sqlite3.DatabaseError:
            return False

    step, failing = 1, bad + 1
    while True:
        candidate = bad + 1 + step
        if candidate > LAST_ROWID:
            return None
        if readable_from(candidate):
            break
        failing = candidate
        step *= 2
    low, high = failing, candidate
    while high - low > 1:
        middle = (low + high) // 2
        if readable_from(middle):
            high = middle
        else:
            low = middle
    return high


def _keep_schema_version(dst: sqlite3.Connection, tables: set[str]) -> None:
    """A copy whose `meta` row was lost still opens as a testbed store: the schema it was given names its version."""
    if "meta" not in tables:
        return
    with contextlib.suppress(sqlite3.Error):
        if dst.execute("SELECT 1 FROM meta WHERE key='schema_version'").fetchone() is None:
            dst.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
