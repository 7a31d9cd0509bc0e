"""Dialogues and information gathering on the real server: terminations, labels, drift, graphs, kill -9."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import time

import networkx as nx
import pytest
import yaml

from helpers import REPO, TESTBED, run_cli, run_id_of, wait_for_episodes, write_yaml

pytestmark = pytest.mark.integration


def test_dialogue_run_labels_drift_and_graphs(server_agent, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("run", "dialogue-gsm8k", "--assistant", str(server_agent), "--user", str(server_agent), "--limit", "2",
                  "--store", db, "-q")
    assert out.returncode == 0, out.stderr
    run_id = run_id_of(out.stdout)
    with sqlite3.connect(db) as conn:
        terminations = [r[0] for r in conn.execute("SELECT termination FROM episodes")]
        marked = conn.execute("SELECT COUNT(*) FROM messages WHERE content LIKE '%[[END]]%'").fetchone()[0]
        labelled = conn.execute("SELECT COUNT(*) FROM labels WHERE judge='learned'").fetchone()[0]
    assert len(terminations) == 4 and all(t in {"user_stop", "max_turns", "token_budget"} for t in terminations)
    assert marked == 0 and labelled >= 4
    report = json.loads(run_cli("report", run_id, "--store", db, "-f", "json").stdout)
    assert {"drift_share", "median_onset", "followup_rate", "user_turns_per_episode"} <= set(report[0])
    graphs = tmp_path / "graphs"
    drawn = run_cli("graph", run_id, "--store", db, "--out", str(graphs))
    assert drawn.returncode == 0, drawn.stderr
    assert (graphs / "transitions.png").stat().st_size > 5000 and (graphs / "survival.png").exists()
    episode_files = sorted(graphs.glob("*.graphml"))
    assert episode_files
    g = nx.read_graphml(episode_files[0])
    assert all("role" in d and "label" in d for _, d in g.nodes(data=True))


def test_information_gathering_run_scores_and_leak_rate(server_agent, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("run", "info-gathering", "--assistant", str(server_agent), "--user", str(server_agent), "--limit", "3",
                  "--store", db, "-q")
    assert out.returncode == 0, out.stderr
    report = json.loads(run_cli("report", run_id_of(out.stdout), "--store", db, "-f", "json").stdout)[0]
    assert report["episodes"] == 3
    for key in ("recovered", "in_final_output", "premature", "leak_rate", "questions"):
        assert key in report


def test_kill_minus_nine_mid_dialogue_then_resume(server_agent, tmp_path):
    """Two conversations at a time, so that 8 episodes end in waves and the kill lands between them, not after."""
    db = str(tmp_path / "s.sqlite")
    agent = yaml.safe_load(server_agent.read_text())
    serial = write_yaml(tmp_path / "serial.yaml", {**agent, "concurrency": 2})
    args = ["run", "dialogue-gsm8k", "--assistant", str(serial), "--user", str(serial), "--limit", "4",
            "--store", db, "-q", "--no-report", "--no-judge"]
    proc = subprocess.Popen([*TESTBED, *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_episodes(db)
    time.sleep(random.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    assert 1 <= before < 8
    resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 8
        dupes = conn.execute("SELECT COUNT(*) FROM (SELECT 1 FROM messages GROUP BY run_id, episode_id, turn_index HAVING COUNT(*) > 1)")
        assert dupes.fetchone()[0] == 0
        gaps = conn.execute("SELECT episode_id, COUNT(*), MAX(turn_index) FROM messages GROUP BY episode_id").fetchall()
        assert all(n == last + 1 for _, n, last in gaps), "turn indices run 0..n-1 without gaps"
