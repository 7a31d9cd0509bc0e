"""A store that cannot be used says why and what to do: damaged (with the recovery command), or read-only (reading
commands still read it; a run says the folder cannot be written)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fault_specs import finished_probe, write_probe
from helpers import REPO, TESTBED, run_cli
from testbed.store import Store
from testbed.store.sqlite_store import StoreError


def test_a_damaged_store_is_named_with_the_recovery_command(tmp_path):
    bad = tmp_path / "s.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"garbage" * 200)
    for command in (["runs"], ["report", "anything"]):
        out = run_cli(*command, "--store", str(bad))
        assert out.returncode == 2, out.stderr
        assert f"the store {bad} is damaged" in out.stderr
        assert f"testbed recover {bad} {tmp_path / 's-recovered.sqlite'}" in out.stderr
        assert "report it" not in out.stderr and "Traceback" not in out.stderr
    with pytest.raises(StoreError, match="is damaged"):
        Store(bad)
    nothing = run_cli("recover", str(bad), str(tmp_path / "s-recovered.sqlite"))
    assert nothing.returncode == 2 and "nothing in" in nothing.stderr and "Traceback" not in nothing.stderr
    assert not (tmp_path / "s-recovered.sqlite").exists()


def as_nobody() -> list[str]:
    """The command prefix that runs a command as an unprivileged user (root ignores file permissions)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    if subprocess.run([*prefix, *TESTBED, "--help"], cwd=REPO, capture_output=True).returncode != 0:
        pytest.skip("the unprivileged user cannot run the installed command from this checkout")
    return prefix


@pytest.fixture
def read_only_folder(tmp_path):
    """(command prefix, scratch folder, `ro` folder inside it) for a read-only-folder test: as an unprivileged user
    when run as root (then the scratch folder is outside root's own temporary tree, which that user cannot enter).
    The test makes `ro` read-only once it holds what it needs; it is made writable again and removed afterwards."""
    prefix = as_nobody()
    base = Path(tempfile.mkdtemp(prefix="testbed-ro-")) if prefix else tmp_path
    base.chmod(0o777)
    folder = base / "ro"
    folder.mkdir()
    yield prefix, base, folder
    folder.chmod(0o755)
    if prefix:
        shutil.rmtree(base)


def test_a_store_in_a_read_only_folder_is_read_where_it_is_and_a_run_says_why_it_cannot_write(read_only_folder):
    prefix, base, folder = read_only_folder
    Store(folder / "s.sqlite").close()
    (folder / "s.sqlite").chmod(0o644)
    folder.chmod(0o555)
    listed = subprocess.run([*prefix, *TESTBED, "runs", "--store", str(folder / "s.sqlite")], cwd=REPO, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("run id\tscenario")
    spec = write_probe(base / "spec", "http://127.0.0.1:9/v1")
    run = subprocess.run([*prefix, *TESTBED, "run", str(spec), "--store", str(folder / "s.sqlite")], cwd=REPO,
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert f"the store {folder / 's.sqlite'} is read-only (its folder cannot be written" in run.stderr
    assert "unable to open database file" not in run.stderr


def test_a_read_only_folder_whose_wal_holds_the_last_commits_shows_them(read_only_folder):
    """A writer killed with SIGKILL leaves its commits in the WAL; without the -shm index, which a read-only folder
    cannot take, SQLite reads the file alone and would show the store without them."""
    prefix, base, folder = read_only_folder
    store = folder / "s.sqlite"
    Store(store).close()
    killed_writer = (f"import os, sqlite3\nc = sqlite3.connect({str(store)!r})\n"
                     "c.execute(\"INSERT INTO runs VALUES ('run-in-the-wal','s','probe','{}','f','{}',NULL,'2026-01-01T00:00:00',"
                     "NULL,'running',3)\")\nc.commit()\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", killed_writer], check=True)
    (folder / "s.sqlite-shm").unlink()
    for f in folder.iterdir():
        f.chmod(0o644)
    folder.chmod(0o555)
    listed = subprocess.run([*prefix, *TESTBED, "runs", "--store", str(store)], cwd=REPO, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "run-in-the-wal" in listed.stdout, "the WAL's commits are read, not skipped"
    assert sorted(p.name for p in folder.iterdir()) == ["s.sqlite", "s.sqlite-wal"], "nothing is written beside the store"


def test_every_reading_command_reads_a_run_in_a_read_only_folder(read_only_folder):
    prefix, base, folder = read_only_folder
    store = folder / "s.sqlite"
    run_id = finished_probe(base, store)
    reader = Store(store, readonly=True)
    episode = next(iter(reader.turn_keys(run_id)))[0]
    reader.close()
    for f in folder.iterdir():
        f.chmod(0o644)
    folder.chmod(0o555)
    for command in (["report", run_id], ["show-episode", run_id, episode], ["export", run_id, "--as", "sft", "--out", str(base / "o")],
                    ["judge", run_id]):
        out = subprocess.run([*prefix, *TESTBED, *command, "--store", str(store)], cwd=REPO, capture_output=True, text=True)
        if command[0] == "judge":
            assert out.returncode == 2 and f"the store {store} is read-only" in out.stderr, out.stderr
        else:
            assert out.returncode == 0, (command, out.stderr)
