"""Helpers the tests share: writing spec files and running the installed command."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
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


def wait_for_episodes(db: str, at_least: int = 1, timeout_s: float = 300) -> int:
    """Poll a store until it holds `at_least` episodes (a run in another process is writing it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as conn:
                count = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
            if count >= at_least:
                return count
        except sqlite3.OperationalError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{db} did not reach {at_least} episodes in {timeout_s:g}s")


def run_id_of(output: str) -> str:
    """The run id `testbed run` reports in its summary line (`run <id>: ...`)."""
    return output.split("run ")[1].split(":")[0].strip()
