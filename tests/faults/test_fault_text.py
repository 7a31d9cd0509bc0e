"""Replies no UTF-8 encoder takes (lone surrogates) or that SQL text functions cut (NUL) are stored, escaped, and
never stop a run; the wire log keeps a reply's text as sent, however much it looks like a key."""

from __future__ import annotations

import sqlite3

import pytest

from fault_server import FaultServer, ok
from fault_specs import write_dialogue, write_probe
from helpers import run_cli, run_id_of
from testbed.store.text import storable

ODD = ["x \ud800 y", "low \udfff", "nul\x00here", "api_key=abcdef0123456789 is just text"]


def test_storable_escapes_only_what_cannot_be_stored():
    assert storable("x \ud800 y") == "x \\ud800 y" and storable("a\x00b") == "a\\x00b"
    for text in ("plain", "é 你好 🙂", "\\ud800 already escaped", ""):
        assert storable(text) is text
    assert storable(None) is None


def run_with_replies(folder, plan, framework: str):
    """`testbed run --framework … --wire` of a 4-item dialogue on a server answering as `plan` says; the CLI's output."""
    with FaultServer(plan) as server:
        spec = write_dialogue(folder, server.base_url, items=4, max_retries=1)
        return run_cli("run", str(spec), "--framework", framework, "--wire", "--store", str(folder / "s.sqlite"), "-q", "--no-judge")


def test_native_stores_replies_with_lone_surrogates_and_nul_escaped_and_the_run_goes_on(tmp_path):
    out = run_with_replies(tmp_path, lambda r: ok(ODD[r.number % len(ODD)]), "native")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4/4 episodes done, 0 errors" in out.stdout
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        contents = {c for (c,) in conn.execute("SELECT content FROM messages WHERE sampling_json IS NOT NULL")}
        wire = " ".join(r for (r,) in conn.execute("SELECT response_json FROM wire_requests"))
    assert {"x \\ud800 y", "low \\udfff", "nul\\x00here"} <= contents
    assert "api_key=abcdef0123456789" in wire, "the wire log is the exact reply: only the run's own keys are taken out"


def test_a_framework_retries_a_reply_with_a_lone_surrogate_and_keeps_the_good_one(tmp_path):
    out = run_with_replies(tmp_path, lambda r: ok("x \ud800 y") if r.seen == 1 else ok("nul\x00here"), "langgraph")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4/4 episodes done, 0 errors" in out.stdout


def test_a_framework_whose_replies_always_hold_a_lone_surrogate_errs_per_episode_with_the_reason(tmp_path):
    out = run_with_replies(tmp_path, lambda r: ok("x \ud800 y"), "langgraph")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "0/4 episodes done, 4 errors" in out.stdout
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        reasons = {r for (r,) in conn.execute("SELECT error_reason FROM episodes")}
    [reason] = reasons
    assert "the reply holds a lone surrogate (U+D800)" in reason and reason.endswith("(gave up after 2 attempts)")


def test_a_probe_whose_replies_and_verdicts_hold_lone_surrogates_and_nul_is_stored_whole_and_judged(tmp_path):
    store = tmp_path / "s.sqlite"
    odd = ["x \ud800 y", "low \udfff", "nul\x00here"]

    def plan(request):
        if "<<<BEGIN USER_TURN" in request.text:
            return ok('{"followup": true, "reason": "asks \\ud800 about\\u0000 it"}')
        return ok(odd[request.number % len(odd)])

    with FaultServer(plan) as server:
        spec = write_probe(tmp_path, server.base_url, items=6, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), "-q", "--no-report", timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        judged = run_cli("judge", run_id_of(run.stdout), "--judge", "followup", "--model", str(tmp_path / "fault-agent.yaml"),
                         "--store", str(store), "-q", timeout=120)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    with sqlite3.connect(store) as conn:
        statuses = [s for (s,) in conn.execute("SELECT status FROM episodes")]
        contents = {c for (c,) in conn.execute("SELECT content FROM messages")}
        reasons = {r for (r,) in conn.execute("SELECT reason FROM labels WHERE judge='followup' AND status='scored'")}
    assert statuses == ["done"] * 6
    assert {"x \\ud800 y", "low \\udfff", "nul\\x00here"} <= contents
    assert reasons == {"asks \\ud800 about\\x00 it"}
