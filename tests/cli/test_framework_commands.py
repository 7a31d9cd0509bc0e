"""`testbed run --framework`, `testbed compare` and `testbed wire` through the installed command, on a mock server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, run_cli, run_id_of, write_yaml


@pytest.fixture(scope="module")
def mock_url(tmp_path_factory):
    """The mock OpenAI server in its own process (the CLI runs in another one)."""
    port_file = tmp_path_factory.mktemp("mock") / "port.json"
    proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "mock_openai.py"), "--port-file", str(port_file),
                             "--reply-words", "6"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        assert time.monotonic() < deadline, "the mock server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{json.loads(port_file.read_text())['port']}/v1"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def scenario(tmp_path: Path, mock_url: str) -> Path:
    """dialogue-gsm8k on two mock agents, 2 items, both user modes as shipped."""
    write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": mock_url})
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user-dialogue.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    import yaml

    data = yaml.safe_load((REPO / "scenarios" / "dialogue-gsm8k.yaml").read_text())
    data.update(assistant="mock.yaml", user="mock.yaml", items={"limit": 2}, max_user_turns=3)
    return write_yaml(tmp_path / "dialogue.yaml", data)


def test_run_under_a_framework_keeps_its_wire_log_and_lists_the_framework(scenario, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("run", str(scenario), "--framework", "autogen", "--user-modes", "instructed", "--store", db, "-q", "--no-report")
    assert out.returncode == 0, out.stderr
    run_id = run_id_of(out.stdout)
    assert "-autogen-" in run_id and "2/2 episodes done, 0 errors" in out.stdout
    listing = run_cli("runs", "--store", db)
    assert "autogen" in listing.stdout
    from testbed.store import Store

    store = Store(db, readonly=True)
    episode = store.episodes(run_id)[0].episode_id
    assert len(store.wire(run_id, episode)) == sum(m.sampling is not None for m in store.messages(run_id, episode))
    shown = run_cli("wire", run_id[:22], episode[:6], "--turn", "2", "--store", db, "-f", "json")
    assert shown.returncode == 0, shown.stderr
    [request] = json.loads(shown.stdout)
    assert request["role"] == "user" and request["turn_index"] == 2
    assert [m["role"] for m in request["request"]["messages"]][:2] == ["system", "user"]


def test_a_framework_that_cannot_run_the_scenario_says_so_up_front(scenario, tmp_path):
    out = run_cli("run", str(scenario), "--framework", "camel", "--store", str(tmp_path / "s.sqlite"))
    assert out.returncode == 2 and out.stderr.count("error:") == 1
    assert "framework camel cannot run user mode raw" in out.stderr and "--user-modes instructed" in out.stderr
    assert not (tmp_path / "s.sqlite").exists(), "nothing starts, not even the store"
    probe = run_cli("run", "probe-gsm8k", "--framework", "langgraph", "--store", str(tmp_path / "s.sqlite"))
    assert probe.returncode == 2 and "framework langgraph cannot run a `probe` scenario" in probe.stderr


def test_an_unknown_framework_lists_the_known_ones(scenario, tmp_path):
    for command in (["run", str(scenario), "--framework", "crewai"], ["compare", str(scenario), "--frameworks", "native,crewai"]):
        out = run_cli(*command, "--store", str(tmp_path / "s.sqlite"))
        assert out.returncode == 2, command
        assert "unknown framework 'crewai': use one of native, autogen, langgraph, camel" in out.stderr


def test_compare_prints_every_format_and_resumes_into_the_same_runs(scenario, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("compare", str(scenario), "--frameworks", "native,autogen,langgraph,camel", "--store", db, "-q", "-f", "json")
    assert out.returncode == 0, out.stderr
    assert "user mode(s) raw left out" in out.stderr
    result = json.loads(out.stdout)
    rows = result["frameworks"]
    assert [r["framework"] for r in rows] == ["native", "autogen", "langgraph", "camel"]
    assert all(r["episodes"] == 2 and r["errors"] == 0 and r["user_turns"] == 4 for r in rows)
    assert rows[0].get("turns_differ") is None and all(r["paired_episodes"] == 2 for r in rows[1:])
    assert {s["framework"] for s in result["requests"]["shapes"]} == {"native", "autogen", "langgraph", "camel"}
    again = run_cli("compare", str(scenario), "--frameworks", "native,autogen", "--store", db, "-q", "-f", "markdown")
    assert again.returncode == 0, again.stderr
    assert "0 new user turns labelled" in again.stderr, "a second compare resumes the same runs and labels"
    assert again.stdout.startswith("| framework | episodes |") and "| autogen | 2 | 0 |" in again.stdout
    csv = run_cli("compare", str(scenario), "--frameworks", "native,camel", "--store", db, "-q", "-f", "csv")
    assert csv.returncode == 0 and csv.stdout.splitlines()[0].startswith("framework,run_id,episodes")


def test_wire_explains_what_is_missing(scenario, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = run_cli("run", str(scenario), "--user-modes", "instructed", "--store", db, "-q", "--no-report", "--no-judge")
    run_id = run_id_of(out.stdout)
    missing = run_cli("wire", run_id, "x", "--store", db)
    assert missing.returncode == 2 and "has no wire log: run it with --wire" in missing.stderr
    run_cli("run", str(scenario), "--user-modes", "instructed", "--store", db, "-q", "--no-report", "--no-judge", "--wire",
            "--run-id", "wired")
    unknown = run_cli("wire", "wired", "zzz", "--store", db)
    assert unknown.returncode == 2 and "episode 'zzz' has no wire log in run wired" in unknown.stderr
