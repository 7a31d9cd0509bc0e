"""`testbed plot`: PNGs and CSVs for a judged scripted probe, skipped figures named, clean errors."""

from __future__ import annotations

import asyncio
import csv

import pytest
from typer.testing import CliRunner

from testbed.analysis.figures.data import FIGURES
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import Store
from testbed.store.labels import JudgeIdentity, write_labels

runner = CliRunner()
JUDGE = JudgeIdentity("rules", "1")
DRAWN = ["followup_vs_temperature", "perturbation_effects", "failure_modes"]


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def probe(spec_dir, path, verdict, judge: bool = True, **overrides) -> str:
    """A scripted probe run stored at `path`, every user turn labelled by rules@1 with `verdict(temperature)` (unless not `judge`)."""
    store = Store(path)
    scenario = load_scenario(spec_dir(**overrides))
    backends = {"assistant": ScriptedBackend(lambda r: "The answer is 18."),
                "user": ScriptedBackend(lambda r: f"Why 18 at T={r.temperature:g}?")}
    summary = asyncio.run(run_scenario(scenario, store, backends=backends, show_progress=False))
    keys = {e.key.episode_id: e.key for e in store.episodes(summary.run_id)}
    rows = [label_row(t.episode_id, t.turn_index, verdict(keys[t.episode_id].temperature)) for t in store.turns(summary.run_id)]
    if judge:
        write_labels(store, summary.run_id, JUDGE, rows)
    store.close()
    return summary.run_id


@pytest.fixture
def judged(spec_dir, tmp_path):
    path = tmp_path / "s.sqlite"
    label = lambda t: Verdict("genuine_followup" if t == 0.0 else "echo_assistant", t == 0.0, "rule")  # noqa: E731
    return str(path), probe(spec_dir, path, label, perturbations=["none", "truncation", "explicit_question"])


def test_writes_pngs_and_csvs_and_names_the_skipped_figures(judged, tmp_path):
    db, run_id = judged
    out = tmp_path / "figs"
    result = invoke("plot", run_id[:12], "--judge", "rules", "--out", str(out), "--store", db)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.{ext}" for n in DRAWN for ext in ("png", "csv"))
    for name in DRAWN:
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
        assert f"wrote {out / name}.png" in result.output
        with open(out / f"{name}.csv", newline="") as f:
            assert len(list(csv.DictReader(f))) >= 1
    assert "skipped accuracy_vs_followup: needs 2 (assistant model, dataset) points" in result.output
    assert "skipped survival: episodes have at most one generated user turn" in result.output
    with open(out / "followup_vs_temperature.csv", newline="") as f:
        rates = {(r["user_mode"], float(r["temperature"])): float(r["followup_rate"]) for r in csv.DictReader(f)}
    assert rates == {("instructed", 0.0): 1.0, ("instructed", 1.0): 0.0, ("raw", 0.0): 1.0, ("raw", 1.0): 0.0}


def test_default_folder_is_plots_run_id(judged, tmp_path, monkeypatch):
    db, run_id = judged
    monkeypatch.chdir(tmp_path)
    result = invoke("plot", run_id, "-j", "rules@1", "--store", db)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plots" / run_id / "failure_modes.png").is_file()


def test_nothing_drawable_exits_1_naming_the_run(spec_dir, tmp_path):
    db = tmp_path / "u.sqlite"
    run_id = probe(spec_dir, db, lambda t: Verdict(None, None, "", raw="unparsed"), temperatures=[0.0])
    result = invoke("plot", run_id, "-j", "rules", "--out", str(tmp_path / "none"), "--store", str(db))
    assert result.exit_code == 1, result.output
    assert f"error: no figure could be drawn for run {run_id}" in result.output and "testbed judge" in result.output
    assert result.output.count("skipped ") == len(FIGURES.names()) and not (tmp_path / "none").exists()
    assert "Traceback" not in result.output


def test_unknown_run_and_judge_without_labels_fail_cleanly(judged, tmp_path):
    db, run_id = judged
    out = str(tmp_path / "x")
    no_run = invoke("plot", "missing-run", "--store", db, "--out", out)
    assert no_run.exit_code == 2 and no_run.output.startswith("error:") and "not in the store" in no_run.output
    no_labels = invoke("plot", run_id, "-j", "learned", "--store", db, "--out", out)
    assert no_labels.exit_code == 2 and "no labels from 'learned'" in no_labels.output
    assert f"testbed judge {run_id} --judge learned" in no_labels.output
    assert "Traceback" not in no_run.output + no_labels.output


def test_without_judge_the_run_s_own_labeller_is_used_and_an_unlabelled_run_names_the_command(judged, spec_dir, tmp_path):
    db, run_id = judged
    shown = invoke("plot", run_id, "--store", db, "--out", str(tmp_path / "x"))
    assert shown.exit_code == 0 and "failure_modes.png" in shown.output, shown.output
    bare = tmp_path / "bare.sqlite"
    unlabelled = probe(spec_dir, bare, lambda t: Verdict(None, None, "", raw="unparsed"), temperatures=[0.0], judge=False)
    refused = invoke("plot", unlabelled, "--store", str(bare), "--out", str(tmp_path / "y"))
    assert refused.exit_code == 2 and f"no labels on run {unlabelled}" in refused.output, refused.output
    assert f"testbed judge {unlabelled} --judge learned" in refused.output
