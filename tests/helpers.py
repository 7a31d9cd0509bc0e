"""Helpers the tests share: writing spec files and running the installed command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
_SCRIPT = Path(sys.executable).parent / "testbed"
TESTBED = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from testbed.cli import main; main()"]


def write_yaml(path: Path, data: dict) -> Path:
    """Write a spec file and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_cli(*args: str, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """Run the installed `testbed` command from the repository root and capture its output."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*TESTBED, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env, **kwargs)
