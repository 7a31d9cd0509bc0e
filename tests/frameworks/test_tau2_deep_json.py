"""Tool-call arguments nested 1,000 deep (2 KB of `{"a":[[[[...]]]]}`), from a model server under every framework and
from a python agent under the native loop, cost at most their episode: the native loop answers the call with τ²'s tool
error and goes on; a framework that cannot parse them itself errors that one episode with a one-line reason (AutoGen
used to wait forever); the run ends, and a rerun resumes it normally. Python's json recurses a level at a time, so
without the bound checked before parsing (testbed.tool_arguments) every one of these was a RecursionError."""

from __future__ import annotations

import pytest
from mock_openai import MockOpenAI

from helpers import write_yaml
from hostile_agents import DEEP_ARGUMENTS

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from testbed.backends.factory import BackendPool  # noqa: E402
from testbed.backends.scripted import ScriptedBackend  # noqa: E402
from testbed.cli.app import app as cli  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
from testbed.specs.loader import load_scenario  # noqa: E402

USER_PROMPT = "SAY_MARKER_AT:3:###STOP###\n\n{guidelines}\n\n<scenario>\n{scenario}\n</scenario>\n"
TOO_DEEP = "nest deeper than 64 levels (testbed.limits.MAX_JSON_DEPTH)"


def tau2_scenario(folder, assistant: str, user: str):
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text(USER_PROMPT)
    return load_scenario(write_yaml(folder / "t.yaml", {
        "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": ["create_task_1"]}, "assistant": assistant,
        "user": user, "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32, "max_steps": 12}))


def shown(store, run_id: str, episode_id: str) -> str:
    from typer.testing import CliRunner

    result = CliRunner().invoke(cli, ["show-episode", run_id, episode_id, "--store", str(store.path)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["native", "autogen", "langgraph", "camel", "tau2"])
async def test_deeply_nested_arguments_from_a_model_server_cost_at_most_their_episode(name, tmp_path, store):
    script = [[{"name": "create_task", "arguments": DEEP_ARGUMENTS}]]
    async with MockOpenAI(tool_script=script) as mock:
        write_yaml(tmp_path / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": mock.base_url,
                                            "max_retries": 0})
        scenario = tau2_scenario(tmp_path, "mock.yaml", "mock.yaml")
        first = await run_scenario(scenario, store, show_progress=False, framework=name)
        (episode,) = store.episodes(first.run_id)
        again = await run_scenario(scenario, store, show_progress=False, framework=name)
    assert mock.calls and mock.calls[0]["function"]["arguments"] == DEEP_ARGUMENTS, "the server sent the deep call"
    assert again.run_id == first.run_id and again.planned == 1 and again.done + again.errors == 1, "the rerun resumed the run"
    if name == "native":
        assert episode.status == "done"
        messages = store.messages(first.run_id, episode.episode_id)
        (call,) = [c for m in messages for c in m.tool_calls]
        assert call.arguments == DEEP_ARGUMENTS, "the call is stored as the model wrote it"
        (result,) = [m for m in messages if m.role == "tool"]
        assert result.tool_result.error and TOO_DEEP in result.content, "τ²'s tool error says why, naming the bound"
    else:
        assert episode.status in ("done", "error")
        if episode.status == "error":
            reason = episode.error_reason
            assert reason.startswith(f"{name}: ") and "\n" not in reason and len(reason) <= 500, reason
            if "RecursionError" in reason:
                assert reason.endswith(f"nests too deeply for {name} to parse)"), "the reason says what went wrong"
    if name == "autogen":
        assert episode.error_reason == f"autogen: the model called create_task with arguments that {TOO_DEEP}", \
            "AgentChat parses a call's arguments before any tool runs (a RecursionError there left its team waiting for ever): " \
            "the testbed's client refuses the reply first, naming the bound"
    assert "create_task" in shown(store, first.run_id, episode.episode_id)


def python_assistant(folder, **options) -> str:
    write_yaml(folder / "mine.yaml", {"name": "mine", "backend": "python", "callable": "hostile_agents:DeepCaller",
                                      "options": options, "timeout_s": 5})
    return "mine.yaml"


async def run_native(scenario, store):
    user = ScriptedBackend(lambda r: "Thanks. ###STOP###" if len(r.messages) > 5 else "Please create my task.")
    async with BackendPool() as pool:
        assistant = await pool.backend_for(scenario.assistant.spec)
        return await run_scenario(scenario, store, backends={"assistant": assistant, "user": user}, show_progress=False)


@pytest.mark.timeout(120)
async def test_deeply_nested_arguments_from_a_python_agent_are_the_tools_error_and_the_run_goes_on(tmp_path, store):
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    scenario = tau2_scenario(tmp_path, python_assistant(tmp_path), "scripted.yaml")
    first = await run_native(scenario, store)
    again = await run_native(scenario, store)
    (episode,) = store.episodes(first.run_id)
    assert first.done == 1 and episode.status == "done", episode.error_reason
    messages = store.messages(first.run_id, episode.episode_id)
    (result,) = [m for m in messages if m.role == "tool"]
    assert result.tool_result.error and TOO_DEEP in result.content
    assert again.done == 1 and again.skipped == 1
    assert "create_task" in shown(store, first.run_id, episode.episode_id)


@pytest.mark.timeout(120)
async def test_a_python_agents_deeply_nested_dict_arguments_are_its_episodes_error(tmp_path, store):
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    scenario = tau2_scenario(tmp_path, python_assistant(tmp_path, as_dict=True), "scripted.yaml")
    summary = await run_native(scenario, store)
    (episode,) = store.episodes(summary.run_id)
    assert summary.errors == 1 and episode.status == "error"
    assert episode.error_reason.startswith("agent mine (hostile_agents:DeepCaller) returned a reply the testbed cannot read: "
                                           "RecursionError"), episode.error_reason
    assert "\n" not in episode.error_reason
