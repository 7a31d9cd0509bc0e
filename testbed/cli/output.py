"""The folder a command writes its files into (`--out`): one clear message, before any work, when it cannot be."""

from __future__ import annotations

import os
from pathlib import Path

from testbed.cli.shell import fail


def output_folder(folder: Path) -> Path:
    """`folder`, once it is known that it can take new files (it, or its nearest existing parent, is a folder this
    process can write); otherwise fail (exit 2) naming it, instead of an unexpected error after the work is done.
    Nothing is created here: a command that ends up writing nothing leaves no empty folder behind."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail(f"cannot create the output folder {folder} ({existing} is not a folder): pass --out with a folder you can write")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"the output folder {folder} cannot be written ({existing} is read-only): pass --out with a folder you can write")
    return folder
