"""Every framework on the real embedded model: the same dialogue scenario, true transcripts, a full wire log."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli

from testbed.store import Store

pytestmark = pytest.mark.integration

FRAMEWORKS = ("native", "autogen", "langgraph", "camel")
MARKER = "[[END]]"


def assert_true_transcript(store: Store, run_id: str, episode_id: str) -> None:
    """Roles alternate from the opening user turn, turn indices have no gap or repeat, and every generated
    message is exactly the reply the wire log recorded for its turn."""
    messages = store.messages(run_id, episode_id)
    assert [m.turn_index for m in messages] == list(range(len(messages)))
    dialogue = [m for m in messages if m.role != "system"]
    assert [m.role for m in dialogue] == ["user", "assistant"] * (len(dialogue) // 2) + ["user"] * (len(dialogue) % 2)
    assert dialogue[0].sampling is None and all(m.sampling is not None for m in dialogue[1:])
    wire = store.wire(run_id, episode_id)
    ok = {w.turn_index: w for w in wire if w.status == 200}
    for m in dialogue[1:]:
        record = ok[m.turn_index]
        assert record.role == m.role
        sent = record.reply.replace(MARKER, "").strip() if MARKER in record.reply else record.reply
        assert sent == m.content, f"turn {m.turn_index} of {episode_id} is not what the server replied"
        assert record.completion_tokens == m.usage.completion_tokens
    generated = len(dialogue) - 1
    assert generated <= len(ok) <= generated + 1, "one request per generated turn (plus a stop turn that was only the marker)"


def test_compare_runs_every_framework_on_the_real_server(server_agent, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("compare", "dialogue-gsm8k", "--frameworks", ",".join(FRAMEWORKS), "--limit", "2", "--assistant", str(server_agent),
                  "--user", str(server_agent), "--store", db, "-q", "-f", "json")
    assert out.returncode == 0, out.stderr
    assert "raw left out" in out.stderr
    result = json.loads(out.stdout)
    rows = {r["framework"]: r for r in result["frameworks"]}
    assert set(rows) == set(FRAMEWORKS)
    for name, row in rows.items():
        assert row["episodes"] == 2 and row["errors"] == 0, name
        assert row["scored_turns"] >= 1 and 0.0 <= row["followup_rate"] <= 1.0
        assert row["client_cpu_ms_per_turn"] > 0 and row["prompt_tokens_per_turn"] > 0
    assert all(0.0 <= rows[n]["turns_differ"] <= 1.0 for n in FRAMEWORKS[1:])
    shapes = {s["framework"]: s for s in result["requests"]["shapes"]}
    assert "user[" in shapes["autogen"]["roles"], "AgentChat names every speaker and sends the others' turns as user"
    store = Store(db, readonly=True)
    for name, row in rows.items():
        assert store.framework_of(row["run_id"]) == name
        for e in store.episodes(row["run_id"]):
            assert e.status == "done"
            assert_true_transcript(store, row["run_id"], e.episode_id)
    autogen = rows["autogen"]["run_id"]
    episode = store.episodes(autogen)[0].episode_id
    shown = run_cli("wire", autogen, episode[:8], "--turn", "2", "--store", db)
    assert shown.returncode == 0, shown.stderr
    assert "#" in shown.stdout and "user → turn 2" in shown.stdout and "sampling sent:" in shown.stdout


def test_a_framework_refuses_a_mode_it_cannot_run_before_anything_starts(server_agent):
    out = run_cli("run", "dialogue-gsm8k", "--framework", "langgraph", "--assistant", str(server_agent), "--user", str(server_agent))
    assert out.returncode == 2
    assert "cannot run user mode raw" in out.stderr and "--user-modes instructed" in out.stderr
    assert "Traceback" not in out.stderr
