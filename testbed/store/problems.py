"""What to tell a user whose store cannot be opened or read: read-only, damaged, or something else SQLite said."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

DAMAGED = ("malformed", "not a database", "disk image", "file is encrypted")


def writable(path: Path) -> bool:
    """Whether a writer could use the store at `path`: its folder takes new files (WAL, journal) and the file, if there, writes."""
    folder = path.parent if str(path.parent) else Path(".")
    return os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def damaged(exc: BaseException) -> bool:
    """Whether SQLite's error says the file itself is damaged (or not a database at all)."""
    return isinstance(exc, sqlite3.DatabaseError) and any(word in str(exc).lower() for word in DAMAGED)


def damaged_message(path: Path | str, exc: BaseException) -> str:
    """The store is damaged: what SQLite said, and how to recover the rows that can still be read."""
    path = Path(path)
    recovered = path.with_name(f"{path.stem}-recovered{path.suffix or '.sqlite'}")
    return (f"the store {path} is damaged (SQLite: {exc}). Recover the rows that can still be read into a new file with "
            f"`testbed recover {path} {recovered}` and pass --store {recovered}; keep the damaged file until the "
            "copy is checked. A resumed run redoes only the episodes the copy lacks.")


def read_only_message(path: Path | str) -> str:
    """The store's folder (or file) cannot be written: what a writer needs, and what still works."""
    path = Path(path)
    what = "its folder" if not os.access(path.parent if str(path.parent) else Path("."), os.W_OK) else "the file"
    return (f"the store {path} is read-only ({what} cannot be written; a run or a judge writes the store, its WAL and its lease "
            f"there): copy it to a writable folder and pass --store with the copy, or fix the permissions. Reading commands "
            "(runs, report, show-episode, wire, export, plot, graph, replay) read it where it is.")


def store_problem(path: Path | str, exc: BaseException) -> str:
    """One message for an SQLite error on the store at `path`."""
    path = Path(path)
    if damaged(exc):
        return damaged_message(path, exc)
    if not writable(path):
        return read_only_message(path)
    return f"cannot use store {path}: {exc}"
