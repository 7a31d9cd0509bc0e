"""LLM judges end to end on the real server: structured output, labels stored, unscored shown as unscored."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers import run_cli, run_id_of

pytestmark = pytest.mark.integration


def test_llm_judges_label_a_real_run(server_agent, tmp_path):
    db = str(tmp_path / "s.sqlite")
    made = run_cli("run", "probe-gsm8k", "--assistant", str(server_agent), "--user", str(server_agent), "--limit", "2", "--store", db, "-q")
    assert made.returncode == 0, made.stderr
    assert "labelled 8 new user turns with the learned judge" in made.stdout
    run_id = run_id_of(made.stdout)
    for judge in ("failure-modes", "followup"):
        out = run_cli("judge", run_id, "--judge", judge, "--model", str(server_agent), "--store", db, "-q")
        assert out.returncode == 0, out.stderr
        assert "of 8 turns judged now" in out.stdout
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT judge, model, status, label, followup, raw FROM labels WHERE judge NOT IN ('local', 'learned')").fetchall()
    assert len(rows) == 16 and {r[1] for r in rows} == {"smollm2-135m-instruct"}
    for judge, _, status, label, followup, raw in rows:
        if status == "scored":
            parsed = json.loads(raw)
            assert (parsed.get("label") == label) if judge == "failure-modes" else (parsed["followup"] == bool(followup))
        else:
            assert label is None and followup is None and raw
    report = json.loads(run_cli("report", run_id, "--store", db, "-f", "json", "--judge", "failure-modes").stdout)
    assert sum(r["judged"] + r["unscored"] for r in report) == 8
    agree = run_cli("agree", run_id, "--a", "failure-modes", "--b", "learned", "--store", db)
    assert agree.returncode == 0 and "Cohen's κ" in agree.stdout
