"""The command line with scripted agents: errors are one clear message, output is what was stored."""

from __future__ import annotations

import json
import sqlite3

from typer.testing import CliRunner

from helpers import run_id_of, write_yaml
from testbed.cli.app import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_run_then_report_in_every_format(spec_dir, tmp_path):
    db = str(tmp_path / "s.sqlite")
    out = invoke("run", str(spec_dir()), "--store", db, "-q")
    assert out.exit_code == 0, out.output
    assert "12/12 episodes done, 0 errors" in out.output
    run_id = run_id_of(out.output)
    rows = json.loads(invoke("report", run_id, "--store", db, "-f", "json").stdout)
    assert len(rows) == 4 and all(r["episodes"] == 3 and r["errors"] == 0 for r in rows)
    assert invoke("report", run_id[:8], "--store", db, "-f", "csv").stdout.count("\n") == 5
    assert "| mode |" not in invoke("report", run_id, "--store", db, "-f", "markdown").stdout.splitlines()[1]
    listed = invoke("runs", "--store", db).output
    assert run_id in listed and "done" in listed


def test_second_run_resumes_instead_of_repeating(spec_dir, tmp_path):
    db = str(tmp_path / "s.sqlite")
    invoke("run", str(spec_dir()), "--store", db, "-q")
    again = invoke("run", str(spec_dir()), "--store", db, "-q", "--no-report")
    assert again.exit_code == 0 and "12 already finished" in again.output


def test_bad_spec_is_one_message_with_file_field_and_fix(spec_dir, tmp_path):
    path = spec_dir(temperatures="hot")
    out = invoke("run", str(path), "--store", str(tmp_path / "s.sqlite"))
    assert out.exit_code == 2
    assert str(path) in out.output and "temperatures" in out.output and "Fix:" in out.output
    assert "Traceback" not in out.output


def test_unknown_dataset_and_missing_prompt(spec_dir, tmp_path):
    out = invoke("run", str(spec_dir(dataset="mmlu")))
    assert out.exit_code == 2 and "unknown dataset 'mmlu'" in out.output and "gsm8k" in out.output
    out = invoke("run", str(spec_dir(name="p2", user_prompt_file="prompts/missing.md")))
    assert out.exit_code == 2 and "user_prompt_file" in out.output and "missing.md" in out.output


def test_dead_server_fails_fast_naming_the_url(spec_dir, tmp_path):
    write_yaml(tmp_path / "dead.yaml", {"name": "dead", "backend": "vllm", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    out = invoke("run", str(spec_dir(assistant="dead.yaml")), "--store", str(tmp_path / "s.sqlite"))
    assert out.exit_code == 2 and "http://127.0.0.1:9/v1" in out.output and "resume" in out.output


def test_report_on_unknown_run_lists_known_runs(spec_dir, tmp_path):
    db = str(tmp_path / "s.sqlite")
    invoke("run", str(spec_dir()), "--store", db, "-q")
    out = invoke("report", "nope", "--store", db)
    assert out.exit_code == 2 and "not in the store" in out.output and "probe-test-" in out.output
    assert invoke("report", "probe", "--store", db, "-f", "yaml").exit_code == 2


def test_show_prints_resolved_spec_with_run_id(spec_dir):
    out = invoke("show", str(spec_dir()))
    data = json.loads(out.stdout)
    assert data["run_id"].startswith("probe-test-") and data["assistant"]["spec"]["backend"] == "scripted"
    assert "{conversation}" in data["user_prompt"]


def test_api_key_never_reaches_the_store(spec_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_TEST_KEY", "sk-secret-value-123")
    write_yaml(tmp_path / "keyed.yaml", {"name": "k", "backend": "scripted", "model": "m", "outputs": ["hi"], "api_key_env": "MY_TEST_KEY"})
    db = tmp_path / "s.sqlite"
    out = invoke("run", str(spec_dir(assistant="keyed.yaml")), "--store", str(db), "-q")
    assert out.exit_code == 0, out.output
    with sqlite3.connect(db) as conn:
        everything = "\n".join(conn.iterdump())
    assert "sk-secret-value-123" not in everything and "MY_TEST_KEY" in everything


def test_unknown_managed_model_fails_before_any_server_starts(spec_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_yaml(tmp_path / "ghost.yaml", {"name": "ghost", "backend": "vllm", "model": "nobody/no-such-model-xyz"})
    out = invoke("run", str(spec_dir(assistant="ghost.yaml")), "--store", str(tmp_path / "s.sqlite"))
    assert out.exit_code == 2
    assert "ghost.yaml" in out.output and "`model`" in out.output and "nobody/no-such-model-xyz" in out.output
