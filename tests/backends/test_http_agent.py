"""`backend: http-agent` against a real HTTP server in-process that misbehaves: retries, junk, hangs, redaction, both
reply shapes, the episode id, and its requests in the wire log."""

from __future__ import annotations

import pytest

from helpers import REPO, write_yaml
from http_agent_server import AgentServer
from testbed.backends.base import BackendError, BackendUnavailable, GenerateRequest
from testbed.backends.http_agent import HTTPAgentBackend
from testbed.running.runner import run_scenario
from testbed.specs.agent import AgentSpec
from testbed.specs.loader import load_scenario
from testbed.transcript import Transcript

OPENAI_REPLY = {"choices": [{"message": {"role": "assistant", "content": "from a model"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 3}}


def agent(url: str, **fields) -> HTTPAgentBackend:
    return HTTPAgentBackend(AgentSpec.model_validate({"name": "remote", "backend": "http-agent", "url": url, "max_retries": 2,
                                                      "timeout_s": 0.5, **fields}))


def request(transcript: Transcript, tools=None) -> GenerateRequest:
    return GenerateRequest([{"role": "user", "content": "hi"}], tools=tools, conversation=transcript.conversation)


async def test_both_reply_shapes_are_read_and_the_episode_id_is_sent():
    short = {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]}
    async with AgentServer([OPENAI_REPLY, short]) as server:
        remote = agent(server.url)
        await remote.start()
        t = Transcript()
        first = await remote.generate(request(t))
        second = await remote.generate(request(t, tools=[{"type": "function", "function": {"name": "lookup"}}]))
        await remote.close()
    assert first.text == "from a model" and first.usage.prompt_tokens == 3
    assert second.tool_calls[0].name == "lookup" and second.tool_calls[0].parsed_arguments() == {"id": 7}
    assert [b["episode_id"] for b in server.bodies] == [str(t.conversation)] * 2
    assert server.bodies[1]["tools"][0]["function"]["name"] == "lookup" and server.bodies[1]["tool_choice"] == "auto"
    assert server.bodies[0]["model"] == "remote" and server.bodies[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_500s_are_retried_then_answered():
    async with AgentServer([(500, {"error": "busy"}), (503, {"error": "busy"}), {"content": "fine"}]) as server:
        remote = agent(server.url)
        reply = await remote.generate(request(Transcript()))
        await remote.close()
    assert reply.text == "fine" and reply.attempts == 3


@pytest.mark.parametrize("script, reason", [
    ([(500, {"error": "down"})], "HTTP 500"),
    ([b"<html>not json"], "unreadable reply"),
    ([{"answer": "no content field"}], "has no `content`"),
    (["hang"], "timed out after 0.5s"),
])
async def test_a_turn_that_fails_for_good_is_one_line_naming_the_agent(script, reason):
    async with AgentServer(script) as server:
        remote = agent(server.url, max_retries=1)
        with pytest.raises(BackendError) as caught:
            await remote.generate(request(Transcript()))
        await remote.close()
    assert not isinstance(caught.value, BackendUnavailable)
    assert caught.value.reason.startswith("agent remote: ") and reason in caught.value.reason and "\n" not in caught.value.reason


async def test_the_key_is_sent_as_a_bearer_token_and_redacted_when_echoed(monkeypatch):
    monkeypatch.setenv("AGENT_KEY", "sk-agent-secret-123456")
    async with AgentServer([(400, {"error": "bad request with Authorization: Bearer sk-agent-secret-123456"})]) as server:
        remote = agent(server.url, api_key_env="AGENT_KEY")
        with pytest.raises(BackendError) as caught:
            await remote.generate(request(Transcript()))
        await remote.close()
    assert server.headers[0]["Authorization"] == "Bearer sk-agent-secret-123456"
    assert "sk-agent-secret" not in caught.value.reason and "[REDACTED]" in caught.value.reason


async def test_an_agent_nobody_answers_for_stops_the_run_at_start():
    with pytest.raises(BackendUnavailable, match="agent remote: cannot reach http://127.0.0.1:9/respond"):
        await agent("http://127.0.0.1:9/respond").start()


async def test_its_requests_are_in_the_wire_log_of_a_dialogue(tmp_path, store):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    async with AgentServer([{"content": "an agent answer"}]) as server:
        write_yaml(tmp_path / "remote.yaml", {"name": "remote", "backend": "http-agent", "url": server.url})
        write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
        scenario = load_scenario(write_yaml(tmp_path / "dlg.yaml", {
            "kind": "dialogue", "name": "dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 1},
            "assistant": "remote.yaml", "user": "scripted.yaml", "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md",
            "temperatures": [0.7], "max_tokens": 16, "max_user_turns": 2, "end_marker": "[[END]]"}))
        summary = await run_scenario(scenario, store, show_progress=False, wire=True)
    assert (summary.done, summary.errors) == (1, 0)
    wire = [w for records in store.wire_episodes(summary.run_id).values() for w in records]
    assert [w.role for w in wire] == ["assistant", "assistant"] and all(w.path == "respond" for w in wire)
    assert wire[0].request["episode_id"] == server.bodies[0]["episode_id"] and wire[0].response == {"content": "an agent answer"}
