"""The HTTP backend against a real vLLM server: raw continuation, instructed turns, structured output."""

from __future__ import annotations

import json

import pytest

from testbed.backends.base import BackendUnavailable, GenerateRequest
from testbed.backends.factory import VLLM_CAPABILITIES
from testbed.backends.openai_http import OpenAICompatibleBackend

pytestmark = pytest.mark.integration


@pytest.fixture
async def backend(vllm_server):
    b = OpenAICompatibleBackend(base_url=vllm_server.base_url, model="smollm2-135m-instruct", capabilities=VLLM_CAPABILITIES)
    await b.start()
    yield b
    await b.close()


async def test_raw_mode_continues_the_user_turn(backend):
    messages = [{"role": "user", "content": "What is 12 + 30?"}, {"role": "assistant", "content": "12 + 30 = 42."}, {"role": "user", "content": ""}]
    out = await backend.generate(GenerateRequest(messages, max_tokens=24, continue_final_message=True))
    assert out.usage.completion_tokens > 0 and out.usage.prompt_tokens > 10
    assert out.finish_reason in ("stop", "length")
    assert "<|im_start|>" not in out.text


async def test_raw_and_plain_requests_build_different_prompts(backend):
    messages = [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."}]
    raw = await backend.generate(GenerateRequest([*messages, {"role": "user", "content": ""}], max_tokens=8, continue_final_message=True))
    plain = await backend.generate(GenerateRequest([*messages, {"role": "user", "content": "And another?"}], max_tokens=8))
    assert raw.usage.prompt_tokens != plain.usage.prompt_tokens


async def test_structured_output_follows_the_schema(backend):
    schema = {"type": "object", "properties": {"label": {"type": "string", "enum": ["genuine_followup", "other"]}, "reason": {"type": "string", "maxLength": 40}},
              "required": ["label", "reason"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
    out = await backend.generate(GenerateRequest([{"role": "user", "content": "Is 'why?' a follow-up? Answer in JSON."}], max_tokens=60, response_format=fmt))
    verdict = json.loads(out.text)
    assert verdict["label"] in ("genuine_followup", "other") and isinstance(verdict["reason"], str)


async def test_unknown_model_is_refused_at_start(vllm_server):
    b = OpenAICompatibleBackend(base_url=vllm_server.base_url, model="no-such-model")
    with pytest.raises(BackendUnavailable, match="no-such-model"):
        await b.start()
    await b.close()
