"""Reading a store whose last commits sit in its WAL, in a folder that cannot be written.

SQLite reads a WAL only through the `-shm` index file beside the store; a read-only folder that
lacks it (a writer killed with SIGKILL leaves the WAL, an archive copy may drop the index) can be
opened only `immutable`, and immutable ignores the WAL: the commits in it would be missing from
every report without a word. The store file and its WAL are therefore copied into a private
temporary folder, where SQLite can build the index, and the copy is read instead.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

WAL_HEADER_BYTES = 32
"""A WAL no longer than its header holds no commit."""


def wal_of(path: Path) -> Path:
    """The WAL file SQLite keeps beside the store at `path`."""
    return path.with_name(path.name + "-wal")


def holds_commits(path: Path) -> bool:
    """Whether the store's WAL may hold commits that an immutable read of the file alone would miss."""
    try:
        return wal_of(path).stat().st_size > WAL_HEADER_BYTES
    except OSError:
        return False


def snapshot(path: Path) -> tuple[Path, tempfile.TemporaryDirectory]:
    """Copy the store and its WAL into a new temporary folder; the copy's path and the folder (clean it up to delete both).

    Raises OSError when the copy cannot be made (no space); the folder is then already removed.
    """
    folder = tempfile.TemporaryDirectory(prefix="testbed-store-")
    try:
        copy = Path(folder.name) / path.name
        shutil.copyfile(path, copy)
        shutil.copyfile(wal_of(path), wal_of(copy))
    except BaseException:
        folder.cleanup()
        raise
    return copy, folder
