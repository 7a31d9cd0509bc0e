"""Every script in examples/ runs as it stands against one real vLLM server, and does what its docstring says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

pytestmark = pytest.mark.integration

EXAMPLES = {
    "01_quickstart.py": ["--limit", "2"],
    "02_custom_scenario.py": [],
    "03_sweep_with_figures.py": ["--limit", "2"],
    "04_compare_frameworks.py": ["--limit", "1"],
    "05_hosted_judge.py": ["--limit", "1"],
    "06_export_for_training.py": ["--limit", "3"],
    "07_bring_your_own_agent.py": ["--limit", "1"],
}


def run_example(name: str, server, tmp_path: Path) -> tuple[str, Path]:
    out = tmp_path / "out"
    cmd = [sys.executable, str(REPO / "examples" / name), "--base-url", server.base_url, "--store", str(tmp_path / "s.sqlite"),
           "--out", str(out), *EXAMPLES[name]]
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout, out


def test_every_example_is_run_here():
    assert sorted(p.name for p in (REPO / "examples").glob("[0-9]*.py")) == sorted(EXAMPLES)


def test_quickstart(vllm_server, tmp_path):
    out, _ = run_example("01_quickstart.py", vllm_server, tmp_path)
    assert "8/8 episodes done" in out and "labelled 8 user turns" in out and "followup_rate" in out and "One simulated-user turn" in out


def test_custom_scenario(vllm_server, tmp_path):
    out, folder = run_example("02_custom_scenario.py", vllm_server, tmp_path)
    assert "2/2 dialogues" in out and "drift:" in out
    png = Path(out.split("conversation graph of episode ")[1].split(": ", 1)[1].strip())
    assert png.parent == folder and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_with_figures(vllm_server, tmp_path):
    out, folder = run_example("03_sweep_with_figures.py", vllm_server, tmp_path)
    assert "2 cells: smollm2-135m × gsm8k, smollm2-135m × ifeval" in out and "48/48 episodes" in out
    for name in ("accuracy_vs_followup", "followup_vs_temperature", "perturbation_effects", "failure_modes"):
        assert (folder / "plots" / f"{name}.png").stat().st_size > 10_000 and (folder / "plots" / f"{name}.csv").exists()
    assert "skipped survival" in out


def test_compare_frameworks(vllm_server, tmp_path):
    out, _ = run_example("04_compare_frameworks.py", vllm_server, tmp_path)
    assert "native: run" in out and "langgraph: run" in out and "turns_differ" in out


def test_hosted_judge_through_litellm(vllm_server, tmp_path):
    out, _ = run_example("05_hosted_judge.py", vllm_server, tmp_path)
    assert "failure-modes" in out and ("Cohen's kappa" in out or "no turn was scored by both judges" in out)


def test_export_for_training(vllm_server, tmp_path):
    out, folder = run_example("06_export_for_training.py", vllm_server, tmp_path)
    assert "sft:" in out and "dpo:" in out
    for line in out.splitlines():
        if "loads with datasets" in line:
            assert Path(line.split()[0]).parent == folder


def test_bring_your_own_agent(vllm_server, tmp_path):
    out, _ = run_example("07_bring_your_own_agent.py", vllm_server, tmp_path)
    assert "1/1 dialogues with notes-agent, 0 errors" in out and "turns by notes-agent" in out
