"""Judging and reading commands over a hostile judge server: garbled and unreadable verdicts are unscored, never labels."""

from __future__ import annotations

import json
import sqlite3

from fault_server import Fault, FaultServer, ok
from fault_specs import write_probe
from helpers import run_cli, run_id_of
from testbed.datasets import load_items

QUESTIONS = [i.messages[0]["content"] for i in load_items("gsm8k", limit=6)]

VERDICTS = [ok('{"followup": true, "reason": "asks about a step"}'), ok("Yes, I think it is a follow-up."),
            Fault("null_content"), Fault("garbage_status"), ok('{"followup": "maybe"}'), ok("")]


def judge_plan(request) -> Fault:
    """Assistant and user turns read fine; each judged turn gets one fault kind for every attempt."""
    if "<<<BEGIN USER_TURN" not in request.text:
        return ok("Why did you add those numbers?")
    return VERDICTS[next(i for i, q in enumerate(QUESTIONS) if q in request.text)]


def test_every_command_ends_clearly_over_a_hostile_judge(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(judge_plan) as server:
        spec = write_probe(tmp_path, server.base_url, items=6, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), "-q", timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        run_id = run_id_of(run.stdout)
        judged = run_cli("judge", run_id, "--judge", "followup", "--model", str(tmp_path / "fault-agent.yaml"), "--store", str(store),
                         "-q", timeout=120)
        outputs = [run, judged]
        outputs.append(run_cli("report", run_id, "--judge", "followup", "--store", str(store), "--format", "json"))
        outputs.append(run_cli("agree", run_id, "--a", "learned", "--b", "followup", "--store", str(store)))
        outputs.append(run_cli("graph", run_id, "--store", str(store), "--out", str(tmp_path / "graphs")))
    for proc in outputs:
        assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        assert proc.returncode == 0, proc.args
    assert "judge followup@" in judged.stdout and "unscored" in judged.stdout
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT status, label, followup, reason FROM labels WHERE judge='followup'").fetchall()
    assert len(rows) == 6
    scored = [r for r in rows if r[0] == "scored"]
    unscored = [r for r in rows if r[0] == "unscored"]
    assert scored and unscored
    assert all(r[2] is None and r[1] is None for r in unscored), "an unparsable verdict is never a label"
    assert any("judge call failed" in (r[3] or "") for r in unscored)
    report = json.loads(outputs[2].stdout)
    assert sum(r["judged"] for r in report) == len(scored)
    assert sum(r["unscored"] for r in report) == len(unscored)
