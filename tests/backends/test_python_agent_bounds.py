"""A python agent cannot end the run or flood the store: whatever it raises, BaseExceptions included, and a reply over
its spec's `max_reply_bytes` are its turn's BackendError (so its episode's error) with a one-line reason naming it;
only a cancellation of the episode's task from outside (the testbed's own interrupt) goes on up."""

from __future__ import annotations

import asyncio

import pytest

from testbed.backends.base import BackendError, GenerateRequest
from testbed.backends.python_agent import PythonAgentBackend, load_callable
from testbed.specs.agent import AgentSpec
from testbed.transcript import Transcript

LABEL = "agent mine (hostile_agents:{name})"


def backend(target: str, **fields) -> PythonAgentBackend:
    spec = AgentSpec.model_validate({"name": "mine", "backend": "python", "callable": target, **fields})
    return PythonAgentBackend(spec, load_callable(target, spec.options))


def request() -> GenerateRequest:
    return GenerateRequest([{"role": "user", "content": "hi"}], conversation=Transcript().conversation)


@pytest.mark.parametrize("what, raised", [
    ("cancelled", "raised CancelledError"),
    ("exit", "raised SystemExit: 3"),
    ("generator_exit", "raised GeneratorExit"),
    ("own", "raised AgentsOwnBaseException: the agent's own"),
])
async def test_a_base_exception_the_agent_raises_is_its_turns_error(what, raised):
    agent = backend("hostile_agents:Raising", options={"what": what})
    with pytest.raises(BackendError) as caught:
        await agent.generate(request())
    assert caught.value.reason == f"{LABEL.format(name='Raising')} {raised}"
    assert asyncio.current_task().cancelling() == 0, "the episode's task is not left cancelling"


async def test_an_agent_exiting_in_its_constructor_is_its_turns_error():
    with pytest.raises(BackendError) as caught:
        await backend("hostile_agents:ExitsWhenBuilt").generate(request())
    assert caught.value.reason == f"{LABEL.format(name='ExitsWhenBuilt')} could not be built: SystemExit: 3"


async def test_a_cancellation_from_outside_still_cancels_the_turn():
    """The testbed's own interrupt (Ctrl-C and SIGTERM cancel the run's tasks) is no agent's error: it goes on up."""
    agent = backend("hostile_agents:SlowTalker", options={"delay_s": 5})
    turn = asyncio.ensure_future(agent.generate(request()))
    await asyncio.sleep(0.05)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn


async def test_a_reply_over_max_reply_bytes_is_the_turns_error_and_a_raised_bound_lets_it_through():
    with pytest.raises(BackendError) as caught:
        await backend("hostile_agents:Verbose", options={"megabytes": 10}).generate(request())
    assert caught.value.reason == (f"{LABEL.format(name='Verbose')} returned 10.0 MB of text, over max_reply_bytes "
                                   "(8,388,608 bytes): return less, or raise max_reply_bytes in its spec")
    roomy = backend("hostile_agents:Verbose", options={"megabytes": 10}, max_reply_bytes=16 * 1024 ** 2)
    assert len((await roomy.generate(request())).text) == 10 * 1024 ** 2


async def test_the_reply_bound_counts_bytes_of_utf8_not_characters():
    wide = backend("hostile_agents:Verbose", options={"megabytes": 3000 / 1024 ** 2, "char": "é"}, max_reply_bytes=4096)
    with pytest.raises(BackendError, match=r"returned 5\.9 KB of text, over max_reply_bytes \(4,096 bytes\)"):
        await wide.generate(request())
    narrow = backend("hostile_agents:Verbose", options={"megabytes": 3000 / 1024 ** 2}, max_reply_bytes=4096)
    assert len((await narrow.generate(request())).text) == 3000, "3,000 ASCII characters are 3,000 bytes, under 4,096"


async def test_a_tool_call_whose_arguments_are_not_text_is_the_turns_error():
    """Arguments are JSON text everywhere after the agent (the store, the views, τ²'s tool desk): a dict there used to
    pass and fail later, outside the agent's turn, where it stopped the run."""
    with pytest.raises(BackendError) as caught:
        await backend("hostile_agents:UntypedCall").generate(request())
    assert caught.value.reason == (f"{LABEL.format(name='UntypedCall')} returned a ToolCall whose id, name or arguments are "
                                   "not text (arguments are JSON text: json.dumps them)")
