"""Hostile text through every framework's τ² path: a tool call whose arguments carry terminal escapes, a key-like
string and a lone surrogate, answered by the environment's error, is stored and shown without a raw control.

The native loop carries the call through; every framework's own client fails to encode the lone surrogate when it
sends the conversation back (its JSON is UTF-8 without escapes), which ends that episode as an error naming the
framework, never a crash of the run."""

from __future__ import annotations

import pytest
from mock_openai import MockOpenAI

from helpers import write_yaml
from hostile_text import FORBIDDEN, HOSTILE

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from testbed.cli.app import app as cli  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
from testbed.specs.loader import load_scenario  # noqa: E402

EVIL_ID = HOSTILE + " sk-live-ECHOEDKEY123 \ud800"
"""A user id that is terminal escapes, a key as a server might echo it, and a lone surrogate."""
USER_PROMPT = "SAY_MARKER_AT:3:###STOP###\n\n{guidelines}\n\n<scenario>\n{scenario}\n</scenario>\n"


@pytest.mark.parametrize("name", ["native", "autogen", "langgraph", "camel", "tau2"])
async def test_a_hostile_tool_call_is_stored_and_shown_with_no_raw_control(name, tmp_path, store):
    from typer.testing import CliRunner

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text(USER_PROMPT)
    script = [[{"name": "create_task", "arguments": {"user_id": EVIL_ID, "title": HOSTILE}}]]
    async with MockOpenAI(tool_script=script) as mock:
        write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": mock.base_url})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": ["create_task_1"]}, "assistant": "mock.yaml",
            "user": "mock.yaml", "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32,
            "max_steps": 30}))
        summary = await run_scenario(scenario, store, show_progress=False, framework=name)
    (episode,) = store.episodes(summary.run_id)
    if name == "native":
        assert episode.status == "done", "the testbed's own client sends a lone surrogate back escaped"
    else:
        assert episode.status == "error" and episode.error_reason.startswith(f"{name}: ") and "utf-8" in episode.error_reason, \
            "a framework's client cannot encode a lone surrogate to send it back: the episode's error, with the reason"
    messages = store.messages(summary.run_id, episode.episode_id)
    if episode.status == "done":
        (call,) = [c for m in messages for c in m.tool_calls]
        assert call.name == "create_task" and "ECHOEDKEY123" in call.arguments
        (result,) = [m for m in messages if m.role == "tool"]
        assert result.tool_result.error, "no such user: the environment's error comes back"
    shown = CliRunner().invoke(cli, ["show-episode", summary.run_id, episode.episode_id, "--store", str(store.path)])
    assert shown.exit_code == 0, shown.output
    assert not FORBIDDEN & set(shown.output) and "\ud800" not in shown.output
