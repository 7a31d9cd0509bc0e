"""`backend: python`: the agent is imported before any model call, gets one instance per episode, and its failures are
BackendErrors naming it."""

from __future__ import annotations

import pytest

import byo_agents
from helpers import write_yaml
from testbed.backends.agent_protocol import AgentMessage, MalformedAgentReply, completion_of
from testbed.backends.base import BackendError, GenerateRequest
from testbed.backends.python_agent import PythonAgentBackend, load_callable
from testbed.running.runner import preflight
from testbed.specs.agent import AgentSpec
from testbed.specs.errors import SpecError
from testbed.specs.loader import load_scenario
from testbed.transcript import ToolCall, Transcript


def spec(target: str, **fields) -> AgentSpec:
    return AgentSpec.model_validate({"name": "mine", "backend": "python", "callable": target, **fields})


def backend(target: str, **fields) -> PythonAgentBackend:
    s = spec(target, **fields)
    return PythonAgentBackend(s, load_callable(target, s.options))


def request(transcript: Transcript | None, text: str = "hi", tools=None) -> GenerateRequest:
    return GenerateRequest([{"role": "user", "content": text}], tools=tools,
                           conversation=transcript.conversation if transcript is not None else None)


def test_a_python_agent_needs_no_model_and_no_other_backends_fields():
    assert spec("byo_agents:CountingAgent").model == "mine"
    with pytest.raises(ValueError, match="does not read url"):
        spec("byo_agents:CountingAgent", url="http://127.0.0.1:1/x")
    with pytest.raises(ValueError, match="module:name"):
        spec("byo_agents.CountingAgent")


@pytest.mark.parametrize("target, problem, fix", [
    ("no_such_module_here:Agent", "module 'no_such_module_here' cannot be found", "PYTHONPATH"),
    ("byo_agents:Missing", "has no 'Missing'", "CountingAgent"),
    ("byo_agents:not_async", "neither an async function nor a class", "async def"),
    ("byo_agents:BUILT", "neither an async function nor a class", "async def"),
])
def test_a_callable_that_cannot_be_used_is_a_spec_error_naming_the_file_module_and_fix(tmp_path, spec_dir, target, problem, fix):
    agent = write_yaml(tmp_path / "mine.yaml", {"name": "mine", "backend": "python", "callable": target})
    scenario = load_scenario(spec_dir(assistant="mine.yaml", user_modes=["instructed"]))
    with pytest.raises(SpecError) as caught:
        preflight(scenario)
    message = str(caught.value)
    assert str(agent) in message and "`callable`" in message and problem in message and fix in message


def test_options_for_a_function_are_refused_before_the_run(tmp_path, spec_dir):
    write_yaml(tmp_path / "mine.yaml", {"name": "mine", "backend": "python", "callable": "byo_agents:echo_agent", "options": {"a": 1}})
    with pytest.raises(SpecError, match="takes no options"):
        preflight(load_scenario(spec_dir(assistant="mine.yaml", user_modes=["instructed"])))


async def test_one_instance_per_episode_keeps_its_own_state():
    byo_agents.BUILT.clear()
    agent = backend("byo_agents:CountingAgent", options={"greeting": "hello"})
    first, second = Transcript(), Transcript()
    texts = [(await agent.generate(request(t))).text for t in (first, first, second, first)]
    assert texts == ["hello 1 of 1 messages", "hello 2 of 1 messages", "hello 1 of 1 messages", "hello 3 of 1 messages"]
    assert len(byo_agents.BUILT) == 2 and byo_agents.BUILT[0].episodes == {str(first.conversation)}
    del first
    import gc

    gc.collect()
    assert len(agent._instances) == 1, "an episode's instance goes with its transcript"


async def test_tool_calls_and_short_form_dicts_are_completions():
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    reply = await backend("byo_agents:CountingAgent").generate(request(Transcript(), tools=tools))
    assert reply.tool_calls == (ToolCall("c1", "lookup", "{}"),) and reply.text == "" and reply.finish_reason == "tool_calls"
    echoed = await backend("byo_agents:echo_agent").generate(request(Transcript(), "what is two plus two"))
    assert echoed.text == "you said: what is two plus two" and echoed.usage.latency_s >= 0


@pytest.mark.parametrize("target, options, reason", [
    ("byo_agents:raising_agent", None, "raised RuntimeError: the retrieval index is missing"),
    ("byo_agents:junk_agent", None, "returned a int, not text"),
    ("byo_agents:hanging_agent", None, "gave no reply within 0.2s (timeout_s)"),
    ("byo_agents:Misbehaving", {"how": "raises"}, "raised RuntimeError"),
    ("byo_agents:Misbehaving", {"bad": 1}, "could not be built: TypeError"),
])
async def test_whatever_goes_wrong_inside_the_agent_is_one_line_naming_it(target, options, reason):
    agent = backend(target, timeout_s=0.2, options=options)
    with pytest.raises(BackendError) as caught:
        await agent.generate(request(Transcript()))
    assert caught.value.reason.startswith(f"agent mine ({target})") and reason in caught.value.reason
    assert "\n" not in caught.value.reason


def test_malformed_messages_and_calls_are_refused():
    with pytest.raises(MalformedAgentReply):
        completion_of(AgentMessage(content=None), 0.0)  # type: ignore[arg-type]
    with pytest.raises(MalformedAgentReply, match="no function name"):
        completion_of({"content": None, "tool_calls": [{"arguments": {}}]}, 0.0)
    flat = completion_of({"content": None, "tool_calls": [{"name": "f", "arguments": {"x": 1}}]}, 0.5)
    assert flat.tool_calls[0].name == "f" and flat.tool_calls[0].parsed_arguments() == {"x": 1} and flat.usage.latency_s == 0.5
