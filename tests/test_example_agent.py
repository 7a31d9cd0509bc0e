"""The example agent (examples/notes_agent.py) end to end against the mock OpenAI server: its retrieval step and
scratchpad reach the model, one scratchpad per dialogue; and examples/07 runs as CI runs it."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from helpers import REPO, write_yaml

sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "examples"))

from mock_openai import MockOpenAI  # noqa: E402

from testbed.backends.factory import BackendPool  # noqa: E402
from testbed.backends.scripted import ScriptedBackend  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
from testbed.specs.loader import load_scenario  # noqa: E402

pytest.importorskip("openai")


def notes_agent_spec(folder, base_url: str):
    return write_yaml(folder / "notes.yaml", {"name": "notes-agent", "backend": "python", "callable": "notes_agent:NotesAgent",
                                              "options": {"model": "mock", "base_url": base_url}, "timeout_s": 30})


async def test_the_example_agent_puts_a_note_and_its_scratchpad_before_the_model(tmp_path, store):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    async with MockOpenAI(reply_words=4) as mock:
        notes_agent_spec(tmp_path, mock.base_url)
        write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
        scenario = load_scenario(write_yaml(tmp_path / "dlg.yaml", {
            "kind": "dialogue", "name": "dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 2},
            "assistant": "notes.yaml", "user": "scripted.yaml", "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md",
            "temperatures": [0.7], "max_tokens": 16, "max_user_turns": 3, "end_marker": "[[END]]"}))
        user = ScriptedBackend(lambda r: "Can you show each step again?")
        async with BackendPool() as pool:
            assistant = await pool.backend_for(scenario.assistant.spec)
            summary = await run_scenario(scenario, store, backends={"user": user, "assistant": assistant}, show_progress=False)
    assert (summary.done, summary.errors) == (2, 0)
    memos = [r["messages"][0]["content"] for r in mock.requests]
    assert all(m.startswith("Relevant note: ") for m in memos) and len(memos) == 6
    pads = sorted(m.count(" | ") for m in memos)
    assert pads == [0, 0, 1, 1, 2, 2], "each dialogue has its own scratchpad, one entry per user turn"
    assert any("show each step on its own line" in m for m in memos[1:]), "the user's words retrieve the arithmetic note"


async def test_example_07_runs_against_a_served_model(tmp_path):
    async with MockOpenAI(reply_words=4, model="smollm2-135m-instruct") as mock:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(REPO / "examples" / "07_bring_your_own_agent.py"), "--base-url", mock.base_url,
            "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "out"), "--limit", "1",
            cwd=REPO, env={**os.environ, "COLUMNS": "200"}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 300)
    text = out.decode()
    assert proc.returncode == 0, err.decode()[-3000:]
    assert "1/1 dialogues with notes-agent, 0 errors" in text and "turns by notes-agent" in text
    assert any(r["messages"][0]["content"].startswith("Relevant note: ") for r in mock.requests)
