"""A real OpenAI-compatible mock server (benchmarks/mock_openai.py) and the pair every framework is given."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

from testbed.backends.factory import VLLM_CAPABILITIES  # noqa: E402
from testbed.backends.openai_http import OpenAICompatibleBackend  # noqa: E402
from testbed.loop.participants import Assistant, DialogueUser, TurnSampling  # noqa: E402
from testbed.specs.agent import AgentSpec, SamplingSpec  # noqa: E402
from testbed.specs.loader import ResolvedAgent  # noqa: E402
from testbed.transcript import Message, Transcript  # noqa: E402

AGENT_FRAMEWORKS = ("autogen", "langgraph", "camel")
ALL_FRAMEWORKS = ("native", *AGENT_FRAMEWORKS)
ASSISTANT_PROMPT = "You are a helpful assistant."
PERSONA = "You are a user who asked a question. Write the user's next message. Write [[END]] when you are done."


@pytest.fixture
async def mock():
    """The mock server, answering at once with 8-word replies."""
    async with MockOpenAI(reply_words=8) as server:
        yield server


def backend_for(base_url: str) -> OpenAICompatibleBackend:
    """The testbed's own backend on the server (what a run builds for a `backend: vllm` agent with a base_url)."""
    return OpenAICompatibleBackend(base_url=base_url, model="mock", capabilities=VLLM_CAPABILITIES, max_retries=0)


def make_pair(base_url: str, *, persona: str = PERSONA, assistant_prompt: str | None = ASSISTANT_PROMPT,
              temperature: float = 0.7, seed: int | None = 11) -> tuple[Assistant, DialogueUser]:
    """An assistant and an instructed dialogue user, both on the server at `base_url`."""
    a = ResolvedAgent(AgentSpec(name="helper", backend="vllm", model="mock", base_url=base_url,
                                sampling=SamplingSpec(temperature=0.0, max_tokens=64)), Path("helper.yaml"), assistant_prompt)
    u = ResolvedAgent(AgentSpec(name="simuser", backend="vllm", model="mock", base_url=base_url), Path("simuser.yaml"), None)
    backend = backend_for(base_url)
    return Assistant(a, backend), DialogueUser(u, backend, "instructed", persona, TurnSampling(temperature, 48, 1.0, seed, True))


def opening(question: str = "What is 2 + 3?", system: str | None = ASSISTANT_PROMPT) -> Transcript:
    """A dialogue's opening: the assistant's system prompt and the dataset's user turn."""
    t = Transcript()
    if system:
        t.append(Message("system", system, "helper", 0))
    t.append(Message("user", question, "dataset", t.next_turn))
    return t
