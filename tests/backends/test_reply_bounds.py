"""Reply bodies are bounded: a model server's or an HTTP agent's reply past `max_reply_bytes` (declared, streamed or
endless) is cut off there as that request's error, at once and without the rest in memory, and the run goes on."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp import web

from bounded_reply_helpers import PeakRSS, dialogue, errors
from http_agent_server import AgentServer, endless, huge
from testbed.backends.base import BackendError, BackendUnavailable, GenerateRequest
from testbed.backends.factory import BackendPool
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.running.runner import run_scenario
from testbed.specs.agent import AgentSpec

FIFTY_MB = 50 * 1024 * 1024
ASK = GenerateRequest([{"role": "user", "content": "hi"}])
REPLY = {"choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1}}


async def test_a_50_mb_agent_reply_is_one_episodes_error_and_the_run_goes_on(tmp_path, store):
    sent_huge = []

    async def first_huge(request):
        sent_huge.append(1)
        return await huge(FIFTY_MB)(request)

    async with AgentServer([first_huge, {"content": "fine"}]) as server:
        with PeakRSS() as memory:
            summary = await run_scenario(dialogue(tmp_path, server.url), store, show_progress=False)
    assert (summary.done, summary.errors) == (1, 1)
    [reason] = errors(store, summary.run_id)
    assert reason.startswith(f"agent remote: reply from {server.url} exceeds max_reply_bytes (8 MiB): it declares 50 MiB")
    assert "\n" not in reason and len(sent_huge) == 1, "a reply too long is not asked for again"
    assert memory.growth_mb < 200, f"the 50 MB reply grew the process by {memory.growth_mb:.0f} MB"


async def test_a_declared_length_over_the_bound_is_refused_before_the_body_arrives():
    async def declares_then_stalls(request):
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = FIFTY_MB
        await response.prepare(request)
        await response.write(b'{"content": "')
        await asyncio.sleep(30)
        return response

    async with AgentServer([], routes={"/v1/chat/completions": declares_then_stalls}) as server:
        backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m", timeout_s=20, max_retries=3)
        started = time.perf_counter()
        with pytest.raises(BackendError) as caught:
            await backend.generate(ASK)
        took = time.perf_counter() - started
        await backend.close()
    assert took < 5, "the Content-Length alone decides: no waiting for the body"
    assert not isinstance(caught.value, BackendUnavailable)
    assert caught.value.reason.startswith(f"reply from {server.origin}/v1/chat/completions exceeds max_reply_bytes (8 MiB)")
    assert "Content-Length 52428800" in caught.value.reason and "fix" not in caught.value.reason.split(":")[0]


async def test_an_endless_body_is_cut_at_the_bound_fast_and_memory_stays_bounded():
    routes = {"/v1/models": lambda r: web.json_response({"data": [{"id": "m"}]}), "/v1/chat/completions": endless()}
    async with AgentServer([], routes=routes) as server:
        backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m", timeout_s=3, max_retries=2)
        with PeakRSS() as memory:
            started = time.perf_counter()
            with pytest.raises(BackendError) as caught:
                await backend.generate(ASK)
            took = time.perf_counter() - started
        await backend.close()
    assert "exceeds max_reply_bytes (8 MiB): the body was cut off there" in caught.value.reason
    assert took < 2.5, f"an endless body ended after {took:.1f}s, not at the bound"
    assert memory.growth_mb < 200, f"an endless body grew the process by {memory.growth_mb:.0f} MB"


async def test_the_spec_bound_reaches_the_model_backend_and_its_models_check(tmp_path):
    models = {"object": "list", "data": [{"id": "m"}]}
    routes = {"/v1/models": lambda r: web.json_response(models),
              "/v1/chat/completions": lambda r: web.json_response({**REPLY, "pad": "y" * 8000})}
    async with AgentServer([], routes=routes) as server:
        spec = AgentSpec.model_validate({"name": "small", "backend": "openai", "model": "m", "base_url": f"{server.origin}/v1",
                                         "max_reply_bytes": 4096, "max_retries": 2})
        async with BackendPool() as pool:
            backend = await pool.backend_for(spec)
            with pytest.raises(BackendError, match=r"exceeds max_reply_bytes \(4 KiB\)"):
                await backend.generate(ASK)
        models["data"] = [{"id": "m", "pad": "z" * 8000}]
        with pytest.raises(BackendUnavailable, match=rf"reply from {server.origin}/v1/models exceeds max_reply_bytes \(4 KiB\)"):
            async with BackendPool() as pool:
                await pool.backend_for(spec)


async def test_a_reply_within_the_bound_is_read_whole():
    text = "y" * (1024 * 1024)
    routes = {"/v1/chat/completions": lambda r: web.Response(body=json.dumps({**REPLY, "choices": [
        {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).encode(), content_type="application/json")}
    async with AgentServer([], routes=routes) as server:
        backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m", max_reply_bytes=2 * 1024 * 1024)
        completion = await backend.generate(ASK)
        await backend.close()
    assert completion.text == text
