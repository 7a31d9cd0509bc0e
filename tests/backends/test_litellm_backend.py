"""The litellm backend against a real local HTTP server speaking the OpenAI API."""

from __future__ import annotations


import pytest
from aiohttp import web

from testbed.backends.base import BackendError, BackendUnavailable, GenerateRequest
from testbed.backends.litellm_backend import LiteLLMBackend


@pytest.fixture
async def server():
    seen: list[dict] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"body": body, "auth": request.headers.get("Authorization")})
        if body["messages"][-1]["content"] == "fail":
            return web.json_response({"error": {"message": "bad request"}}, status=400)
        return web.json_response({
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
        })

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1", seen
    await runner.cleanup()


async def test_completion_through_litellm(server, monkeypatch):
    url, seen = server
    monkeypatch.setenv("FAKE_PROVIDER_KEY", "sk-test-123")
    backend = LiteLLMBackend(model="openai/fake-model", base_url=url, api_key_env="FAKE_PROVIDER_KEY", max_retries=0)
    await backend.start()
    schema = {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}
    out = await backend.generate(GenerateRequest([{"role": "user", "content": "ping"}], max_tokens=5, response_format=schema))
    assert (out.text, out.usage.prompt_tokens, out.usage.completion_tokens) == ("pong", 7, 1)
    assert seen[0]["body"]["model"] == "fake-model" and seen[0]["auth"] == "Bearer sk-test-123"
    assert seen[0]["body"]["response_format"]["type"] == "json_schema"
    assert not backend.capabilities.continue_user_turn


async def test_errors_become_backend_errors_without_the_key(server, monkeypatch):
    url, _ = server
    monkeypatch.setenv("FAKE_PROVIDER_KEY", "sk-test-123")
    backend = LiteLLMBackend(model="openai/fake-model", base_url=url, api_key_env="FAKE_PROVIDER_KEY", max_retries=0)
    await backend.start()
    with pytest.raises(BackendError) as err:
        await backend.generate(GenerateRequest([{"role": "user", "content": "fail"}]))
    assert "fake-model" in err.value.reason and "sk-test-123" not in err.value.reason
    with pytest.raises(BackendError, match="raw user mode"):
        await backend.generate(GenerateRequest([{"role": "user", "content": ""}], continue_final_message=True))


async def test_missing_key_variable_is_named(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(BackendUnavailable, match="NOT_SET_ANYWHERE"):
        await LiteLLMBackend(model="openai/x", api_key_env="NOT_SET_ANYWHERE").start()
