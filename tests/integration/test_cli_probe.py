"""`testbed run`, `runs` and `report` end to end on the real server."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli, run_id_of

pytestmark = pytest.mark.integration


def test_probe_run_report_and_runs(server_agent, tmp_path):
    db = str(tmp_path / "s.sqlite")
    done = run_cli("run", "probe-gsm8k", "--assistant", str(server_agent), "--user", str(server_agent), "--limit", "3", "--store", db, "-q")
    assert done.returncode == 0, done.stderr
    assert "12/12 episodes done, 0 errors" in done.stdout
    run_id = run_id_of(done.stdout)
    report = run_cli("report", run_id, "--store", db, "--format", "json")
    rows = json.loads(report.stdout)
    assert {(r["user_mode"], r["temperature"]) for r in rows} == {("raw", 0.0), ("raw", 1.0), ("instructed", 0.0), ("instructed", 1.0)}
    assert all(r["episodes"] == 3 and r["errors"] == 0 and r["scored"] == 3 for r in rows)
    assert all(r["user_turn_words"] > 0 for r in rows)
    md = run_cli("report", run_id, "--store", db, "--format", "markdown")
    assert md.stdout.startswith("| assistant |") and md.stdout.count("\n") >= 5
    csv = run_cli("report", run_id, "--store", db, "--format", "csv")
    assert csv.stdout.splitlines()[0].startswith("assistant_model,user_model,dataset")
    listed = run_cli("runs", "--store", db)
    assert run_id[:12] in listed.stdout and "done" in listed.stdout
    again = run_cli("run", "probe-gsm8k", "--assistant", str(server_agent), "--user", str(server_agent), "--limit", "3", "--store", db, "-q", "--no-report")
    assert again.returncode == 0 and "12 already finished" in again.stdout
