"""The mock OpenAI server's scripted tool calls (benchmarks/mock_openai.py), over real HTTP: valid tool-call replies the
testbed's backend reads, text where the script says so, requests without tools answered byte for byte as before, and
τ² episodes whose calls run against the episode's environment and are scored."""

from __future__ import annotations

import json
import sys

import aiohttp
import pytest

from helpers import REPO, write_yaml

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI, checked_script  # noqa: E402

from testbed.backends.base import GenerateRequest  # noqa: E402
from testbed.backends.openai_http import OpenAICompatibleBackend  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
from testbed.scenarios.tau2.domains import tau2_installed  # noqa: E402
from testbed.specs.loader import load_scenario  # noqa: E402

needs_tau2 = pytest.mark.skipif(not tau2_installed(), reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
SCRIPT = [[{"name": "lookup", "arguments": {"id": "a"}}, {"name": "lookup", "arguments": "{not json"}], [{"name": "other"}]]
USER_PROMPT = "SAY_MARKER_AT:3:###STOP###\n\n{guidelines}\n\n<scenario>\n{scenario}\n</scenario>\n"
"""τ²'s user prompt with the marker rule: the user stops on its second turn (greeting, its turn, the assistant's)."""


async def post(base_url: str, body: dict) -> bytes:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base_url}/chat/completions", json=body) as resp:
            assert resp.status == 200
            return await resp.read()


async def test_a_request_with_tools_gets_the_next_steps_calls_then_text_after_the_results():
    user = {"role": "user", "content": "hi"}
    async with MockOpenAI(tool_script=SCRIPT) as mock:
        first = json.loads(await post(mock.base_url, {"model": "mock", "messages": [user], "tools": TOOLS}))
        choice = first["choices"][0]
        assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
        calls = choice["message"]["tool_calls"]
        assert [(c["type"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
            ("function", "lookup", '{"id": "a"}'), ("function", "lookup", "{not json")]
        called = {"role": "assistant", "content": None, "tool_calls": calls}
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "r"} for c in calls]
        after_results = json.loads(await post(mock.base_url, {"model": "mock", "messages": [user, called, *results], "tools": TOOLS}))
        assert after_results["choices"][0]["finish_reason"] == "stop" and after_results["choices"][0]["message"]["content"]
        said = {"role": "assistant", "content": after_results["choices"][0]["message"]["content"]}
        again = [user, called, *results, said, user]
        second = json.loads(await post(mock.base_url, {"model": "mock", "messages": again, "tools": TOOLS}))
        (call,) = second["choices"][0]["message"]["tool_calls"]
        assert call["function"] == {"name": "other", "arguments": "{}"}
        done = [*again, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": "r"}, said, user]
        past_the_end = json.loads(await post(mock.base_url, {"model": "mock", "messages": done, "tools": TOOLS}))
        assert past_the_end["choices"][0]["message"]["content"].startswith("reply4")
    ids = [c["id"] for c in mock.calls]
    assert len(ids) == 3 == len(set(ids)), "tool call ids are unique on the server"
    assert mock.replies[0] is None and mock.replies[2] is None and isinstance(mock.replies[1], str)


async def test_the_testbeds_backend_reads_a_scripted_tool_call_reply():
    async with MockOpenAI(tool_script=SCRIPT) as mock:
        backend = OpenAICompatibleBackend(base_url=mock.base_url, model="mock", max_retries=0)
        try:
            completion = await backend.generate(GenerateRequest([{"role": "user", "content": "hi"}], tools=TOOLS))
        finally:
            await backend.close()
    assert completion.text == "" and completion.finish_reason == "tool_calls" and completion.attempts == 1
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("lookup", '{"id": "a"}'), ("lookup", "{not json")]
    assert mock.requests[0]["tool_choice"] == "auto"


async def test_requests_without_tools_are_answered_byte_for_byte_as_without_a_script():
    marked = [{"role": "system", "content": "SAY_MARKER_AT:1:[[END]]"}, {"role": "user", "content": "a"}]
    bodies = [{"model": "mock", "messages": marked},
              {"model": "mock", "messages": [{"role": "user", "content": "b"}], "temperature": 0.5}]
    async with MockOpenAI(reply_words=5) as plain, MockOpenAI(reply_words=5, tool_script=SCRIPT) as scripted:
        for body in bodies:
            assert await post(plain.base_url, body) == await post(scripted.base_url, body)
        with_tools = {**bodies[1], "tools": TOOLS}
        assert await post(plain.base_url, with_tools) != await post(scripted.base_url, with_tools)
        assert b'"tool_calls"' not in await post(plain.base_url, with_tools), "without a script, tools change nothing"


def test_a_script_of_the_wrong_shape_is_refused_naming_the_step():
    for bad, says in [({"name": "x"}, "list of steps"), ([[]], "step 0"), ([[{"arguments": {}}]], "call 0 has no name"),
                      ([[{"name": "x", "arguments": 3}]], "object or a string")]:
        with pytest.raises(ValueError, match=says):
            checked_script(bad)


def tau2_scenario(folder, base_url: str, domain: str, task_ids: list[str], trials: int = 1):
    """A τ² scenario whose assistant and user are the mock server (backend openai, real HTTP), the user stopping by rule."""
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text(USER_PROMPT)
    write_yaml(folder / "mock.yaml", {"name": "mock", "backend": "openai", "model": "mock", "base_url": base_url, "max_retries": 0})
    return load_scenario(write_yaml(folder / "t.yaml", {
        "kind": "tau2", "name": "t", "domain": domain, "tasks": {"ids": task_ids}, "assistant": "mock.yaml", "user": "mock.yaml",
        "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "trials": trials, "max_tokens": 32, "max_steps": 30}))


@needs_tau2
async def test_tau2_mock_episodes_run_the_scripted_calls_in_the_environment_and_are_scored(tmp_path, store):
    from testbed.scenarios.tau2.domains import domain
    from testbed.scenarios.tau2.oracle import expected_calls

    task = domain("mock").tasks["create_task_1"]
    script = [[{"name": c.name, "arguments": json.loads(c.arguments)} for c in expected_calls(task)] + [{"name": "no_such_tool"}]]
    async with MockOpenAI(tool_script=script) as mock:
        summary = await run_scenario(tau2_scenario(tmp_path, mock.base_url, "mock", [task.id], trials=2), store, show_progress=False)
    episodes = store.episodes(summary.run_id)
    rewards = store.rewards(summary.run_id)
    assert len(episodes) == 2 and all(e.status == "done" and e.termination == "user_stop" for e in episodes)
    for e in episodes:
        messages = store.messages(summary.run_id, e.episode_id)
        assert [m.role for m in messages] == ["system", "assistant", "user", "assistant", "tool", "tool", "assistant", "user"]
        created, unknown = messages[4], messages[5]
        assert not created.tool_result.error and json.loads(created.content)["title"] == "Important Meeting"
        assert unknown.tool_result.error and unknown.tool_result.name == "no_such_tool"
        assert [c.id for c in messages[3].tool_calls] == [created.tool_result.call_id, unknown.tool_result.call_id]
        assert rewards[e.episode_id].breakdown["DB"] == 1.0, "the call changed the episode's database as the task expects"
    tool_requests = [r for r in mock.requests if r.get("tools")]
    assert len(tool_requests) == 4 and all(r["messages"][0]["role"] == "system" and "<policy>" in r["messages"][0]["content"]
                                           for r in tool_requests)
    assert len(mock.calls) == 4 and len({c["id"] for c in mock.calls}) == 4
