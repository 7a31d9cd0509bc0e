"""SIGTERM mid-run ends `testbed run` within seconds under every framework: rc 143, the one-line message, no traceback.

AgentChat's team swallowed the cancellation (its `run_stream` waits in its `finally` for the team to go idle, which it
did only once the team had played on to its own end), so an AutoGen run went on for a minute or more after SIGTERM;
every framework's run is tested here against a real server on 127.0.0.1 answering slowly, in the middle of its
episodes (testbed.frameworks.prompt_stop)."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from mock_openai import MockOpenAI

from helpers import REPO, TESTBED, write_yaml

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

PROMPT = "{guidelines}\n\n<scenario>\n{scenario}\n</scenario>\n"
"""A τ² user prompt with no stop marker: the mock's user never stops, so an episode lasts until its step limit."""
STOP_WITHIN_S = 5.0
"""How soon after SIGTERM the process must be gone."""


def tau2_spec(folder, base_url: str) -> str:
    (folder / "user.md").write_text(PROMPT)
    write_yaml(folder / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": base_url, "concurrency": 2})
    return str(write_yaml(folder / "t.yaml", {
        "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": ["create_task_1"]}, "assistant": "mock.yaml",
        "user": "mock.yaml", "user_prompt_file": "user.md", "temperatures": [0.0], "trials": 2, "max_tokens": 32,
        "max_steps": 60}))


def dialogue_spec(folder, base_url: str) -> str:
    (folder / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    write_yaml(folder / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": base_url, "concurrency": 2})
    return str(write_yaml(folder / "d.yaml", {
        "kind": "dialogue", "name": "d", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 2},
        "assistant": "mock.yaml", "user": "mock.yaml", "user_modes": ["instructed"], "user_prompt_file": "user.md",
        "temperatures": [0.0], "max_tokens": 16, "max_user_turns": 40, "end_marker": "[[END]]"}))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name, kind", [("native", "tau2"), ("autogen", "tau2"), ("langgraph", "tau2"), ("camel", "tau2"),
                                        ("tau2", "tau2"), ("autogen", "dialogue")])
async def test_sigterm_mid_run_ends_the_run_within_seconds(name, kind, tmp_path):
    async with MockOpenAI(latency_s=0.4) as mock:
        spec = (tau2_spec if kind == "tau2" else dialogue_spec)(tmp_path, mock.base_url)
        run = await asyncio.create_subprocess_exec(
            *TESTBED, "run", spec, "--store", str(tmp_path / "s.sqlite"), "-q", "--framework", name, "--no-judge", cwd=REPO,
            env={**os.environ, "COLUMNS": "200"}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while len(mock.requests) < 6 and run.returncode is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert run.returncode is None and len(mock.requests) >= 6, "the run is in the middle of its episodes"
            run.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            out, err = await asyncio.wait_for(run.communicate(), 30)
            took = time.monotonic() - sent
        finally:
            if run.returncode is None:
                run.kill()
                await run.wait()
    text = (out + err).decode(errors="replace")
    assert run.returncode == 143, text
    assert took < STOP_WITHIN_S, f"{name} took {took:.1f}s to stop after SIGTERM"
    assert "terminated (SIGTERM)" in text and "Traceback" not in text, text
