"""OpenAICompatibleBackend against a real loopback HTTP server that imitates the OpenAI endpoints."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, GenerateRequest
from testbed.backends.openai_http import OpenAICompatibleBackend

MODEL = "fake-model"
SECRET = "sk-test-SECRET-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "What is 2 + 2?"}]


def ok_body(text: str = "4", finish_reason: str = "stop", prompt_tokens: int = 11, completion_tokens: int = 3) -> dict:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class FakeOpenAI:
    """A scripted OpenAI-compatible server: each chat request takes the next scripted action."""

    def __init__(self) -> None:
        self.models: list[str] = [MODEL]
        self.models_status = 200
        self.models_raw: str | None = None
        self.script: list[tuple] = []
        self.default: tuple = ("json", 200, ok_body())
        self.delay_s = 0.0
        self.chat_requests: list[dict[str, Any]] = []
        self.models_requests: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.server: TestServer | None = None

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("/v1"))

    async def handle_models(self, request: web.Request) -> web.StreamResponse:
        self.models_requests.append(dict(request.headers))
        if self.models_raw is not None:
            return web.Response(status=self.models_status, text=self.models_raw, content_type="text/html")
        if self.models_status != 200:
            return web.json_response({"error": {"message": "nope"}}, status=self.models_status)
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})

    async def handle_chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.chat_requests.append({"headers": dict(request.headers), "json": body})
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            action = self.script.pop(0) if self.script else self.default
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            kind = action[0]
            if kind == "sleep":
                await asyncio.sleep(action[1])
                return web.json_response(ok_body("late"))
            if kind == "text":
                return web.Response(status=action[1], text=action[2])
            return web.json_response(action[2], status=action[1])
        finally:
            self.in_flight -= 1


@pytest.fixture
async def fake():
    fake = FakeOpenAI()
    app = web.Application()
    app.router.add_get("/v1/models", fake.handle_models)
    app.router.add_post("/v1/chat/completions", fake.handle_chat)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    fake.server = server
    try:
        yield fake
    finally:
        await server.close()


@pytest.fixture
async def make_backend():
    made: list[OpenAICompatibleBackend] = []

    def factory(base_url: str, **kwargs: Any) -> OpenAICompatibleBackend:
        kwargs.setdefault("model", MODEL)
        kwargs.setdefault("backoff_base_s", 0.01)
        kwargs.setdefault("backoff_cap_s", 0.05)
        backend = OpenAICompatibleBackend(base_url=base_url, **kwargs)
        made.append(backend)
        return backend

    yield factory
    for backend in made:
        await backend.close()


def dead_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- normal completion and payload ------------------------------------------------------------


async def test_normal_completion_parses_text_finish_reason_usage_and_latency(fake, make_backend):
    fake.default = ("json", 200, ok_body("The answer is 4.", "length", prompt_tokens=17, completion_tokens=5))
    backend = make_backend(fake.base_url)
    await backend.start()
    completion = await backend.generate(GenerateRequest(messages=MESSAGES))
    assert completion.text == "The answer is 4."
    assert completion.finish_reason == "length"
    assert completion.usage.prompt_tokens == 17
    assert completion.usage.completion_tokens == 5
    assert completion.usage.latency_s > 0
    assert completion.attempts == 1
    assert len(fake.chat_requests) == 1


async def test_empty_content_is_a_generation_and_missing_usage_is_zero(fake, make_backend):
    body = ok_body("")
    del body["usage"]
    fake.default = ("json", 200, body)
    completion = await make_backend(fake.base_url).generate(GenerateRequest(messages=MESSAGES))
    assert completion.text == ""
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (0, 0)


async def test_null_content_is_malformed_and_retried(fake, make_backend):
    body = ok_body()
    body["choices"][0]["message"]["content"] = None
    fake.script = [("json", 200, body)]
    completion = await make_backend(fake.base_url).generate(GenerateRequest(messages=MESSAGES))
    assert completion.text == "4"
    assert completion.attempts == 2


async def test_payload_carries_model_messages_and_sampling(fake, make_backend):
    backend = make_backend(fake.base_url)
    await backend.generate(GenerateRequest(messages=MESSAGES, temperature=0.7, max_tokens=42, top_p=0.9, seed=5))
    sent = fake.chat_requests[0]["json"]
    assert sent["model"] == MODEL
    assert sent["messages"] == MESSAGES
    assert sent["temperature"] == 0.7
    assert sent["max_tokens"] == 42
    assert sent["top_p"] == 0.9
    assert sent["seed"] == 5
    assert "continue_final_message" not in sent
    assert "add_generation_prompt" not in sent
    assert "response_format" not in sent
    assert fake.chat_requests[0]["headers"]["Content-Type"] == "application/json", "servers that check it (FastAPI) read the body"


async def test_non_ascii_text_and_a_body_the_fast_decoder_refuses_still_arrive(fake, make_backend):
    body = ok_body("Grüße, 4 ✓")
    body["created"] = float("nan")
    fake.default = ("json", 200, body)
    backend = make_backend(fake.base_url)
    messages = [{"role": "user", "content": "Wie viel ist 2 + 2? ✓"}]
    completion = await backend.generate(GenerateRequest(messages=messages, extra={"big": 2**70}))
    assert completion.text == "Grüße, 4 ✓" and completion.attempts == 1
    assert fake.chat_requests[0]["json"]["messages"] == messages and fake.chat_requests[0]["json"]["big"] == 2**70


async def test_continue_final_message_sets_vllm_flags(fake, make_backend):
    backend = make_backend(fake.base_url, capabilities=Capabilities(continue_user_turn=True))
    messages = [*MESSAGES, {"role": "assistant", "content": "4."}, {"role": "user", "content": ""}]
    await backend.generate(GenerateRequest(messages=messages, continue_final_message=True))
    sent = fake.chat_requests[0]["json"]
    assert sent["add_generation_prompt"] is False
    assert sent["continue_final_message"] is True
    assert sent["messages"] == messages


async def test_response_format_is_passed_through(fake, make_backend):
    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}}
    await make_backend(fake.base_url).generate(GenerateRequest(messages=MESSAGES, response_format=fmt))
    assert fake.chat_requests[0]["json"]["response_format"] == fmt


async def test_raw_mode_refused_without_capability_and_nothing_sent(fake, make_backend):
    backend = make_backend(fake.base_url, capabilities=Capabilities(continue_user_turn=False))
    with pytest.raises(BackendError, match="cannot continue the final message"):
        await backend.generate(GenerateRequest(messages=MESSAGES, continue_final_message=True))
    assert fake.chat_requests == []


# --- retries --------------------------------------------------------------------------------


async def test_429_then_503_then_200_succeeds_on_third_attempt(fake, make_backend):
    fake.script = [("json", 429, {"error": "slow down"}), ("json", 503, {"error": "busy"}), ("json", 200, ok_body("ok"))]
    completion = await make_backend(fake.base_url, max_retries=4).generate(GenerateRequest(messages=MESSAGES))
    assert completion.text == "ok"
    assert completion.attempts == 3
    assert len(fake.chat_requests) == 3


async def test_400_fails_at_once_without_retry(fake, make_backend):
    fake.default = ("text", 400, "bad request: max_tokens too large")
    with pytest.raises(BackendError) as info:
        await make_backend(fake.base_url, max_retries=4).generate(GenerateRequest(messages=MESSAGES))
    assert "400" in info.value.reason
    assert "max_tokens too large" in info.value.reason
    assert info.value.retryable is False
    assert len(fake.chat_requests) == 1


async def test_persistent_500_gives_up_after_all_attempts(fake, make_backend):
    fake.default = ("text", 500, "internal error")
    with pytest.raises(BackendError) as info:
        await make_backend(fake.base_url, max_retries=2).generate(GenerateRequest(messages=MESSAGES))
    assert "gave up" in info.value.reason
    assert "3 attempts" in info.value.reason
    assert "500" in info.value.reason
    assert not isinstance(info.value, BackendUnavailable)
    assert len(fake.chat_requests) == 3


async def test_timeout_is_retried(fake, make_backend):
    fake.script = [("sleep", 2.0)]
    backend = make_backend(fake.base_url, timeout_s=0.2, max_retries=2)
    started = time.perf_counter()
    completion = await backend.generate(GenerateRequest(messages=MESSAGES))
    assert completion.attempts == 2
    assert completion.text == "4"
    assert len(fake.chat_requests) == 2
    assert time.perf_counter() - started < 1.5


async def test_timeouts_every_time_give_up_with_timeout_reason(fake, make_backend):
    fake.script = [("sleep", 2.0), ("sleep", 2.0)]
    with pytest.raises(BackendError) as info:
        await make_backend(fake.base_url, timeout_s=0.15, max_retries=1).generate(GenerateRequest(messages=MESSAGES))
    assert "timed out" in info.value.reason
    assert "gave up after 2 attempts" in info.value.reason
    assert len(fake.chat_requests) == 2


async def test_malformed_200_body_is_retried_then_an_error_with_its_reason(fake, make_backend):
    fake.default = ("json", 200, {"object": "chat.completion", "choices": []})
    with pytest.raises(BackendError, match="unreadable reply .*no `choices\\[0\\]`") as info:
        await make_backend(fake.base_url, max_retries=2).generate(GenerateRequest(messages=MESSAGES))
    assert len(fake.chat_requests) == 3
    assert not isinstance(info.value, BackendUnavailable)


async def test_non_json_200_body_is_an_unreadable_reply(fake, make_backend):
    fake.default = ("text", 200, "<html>not an api</html>")
    with pytest.raises(BackendError, match="unreadable reply.*not JSON"):
        await make_backend(fake.base_url).generate(GenerateRequest(messages=MESSAGES))


# --- concurrency ----------------------------------------------------------------------------


async def test_concurrency_is_bounded(fake, make_backend):
    fake.delay_s = 0.05
    backend = make_backend(fake.base_url, concurrency=3)
    results = await asyncio.gather(*(backend.generate(GenerateRequest(messages=MESSAGES)) for _ in range(10)))
    assert len(results) == 10
    assert all(r.text == "4" for r in results)
    assert len(fake.chat_requests) == 10
    assert fake.max_in_flight == 3


# --- start() --------------------------------------------------------------------------------


async def test_start_succeeds_when_model_served(fake, make_backend):
    fake.models = ["other", MODEL]
    await make_backend(fake.base_url).start()
    assert len(fake.models_requests) == 1


async def test_start_against_dead_url_fails_fast_naming_url(make_backend):
    url = f"http://127.0.0.1:{dead_port()}/v1"
    backend = make_backend(url)
    started = time.perf_counter()
    with pytest.raises(BackendUnavailable) as info:
        await backend.start()
    assert time.perf_counter() - started < 6
    assert url in str(info.value)


async def test_start_names_model_and_what_is_served(fake, make_backend):
    fake.models = ["llama-3", "qwen-2.5"]
    with pytest.raises(BackendUnavailable) as info:
        await make_backend(fake.base_url, model="gpt-x").start()
    message = str(info.value)
    assert "gpt-x" in message
    assert "llama-3" in message and "qwen-2.5" in message


async def test_start_reports_non_200_models(fake, make_backend):
    fake.models_status = 404
    with pytest.raises(BackendUnavailable, match="404"):
        await make_backend(fake.base_url).start()


async def test_start_reports_non_json_models_as_unavailable(fake, make_backend):
    fake.models_raw = "<html>hello</html>"
    with pytest.raises(BackendUnavailable) as info:
        await make_backend(fake.base_url).start()
    assert fake.base_url in str(info.value)


# --- API keys -------------------------------------------------------------------------------


async def test_authorization_header_carries_key_from_env(fake, make_backend, monkeypatch):
    monkeypatch.setenv("TESTBED_FAKE_KEY", SECRET)
    backend = make_backend(fake.base_url, api_key_env="TESTBED_FAKE_KEY")
    await backend.start()
    await backend.generate(GenerateRequest(messages=MESSAGES))
    assert fake.models_requests[0]["Authorization"] == f"Bearer {SECRET}"
    assert fake.chat_requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"


async def test_no_authorization_header_without_api_key_env(fake, make_backend):
    await make_backend(fake.base_url).generate(GenerateRequest(messages=MESSAGES))
    assert "Authorization" not in fake.chat_requests[0]["headers"]


async def test_missing_key_env_var_names_the_variable(fake, make_backend, monkeypatch):
    monkeypatch.delenv("TESTBED_MISSING_KEY", raising=False)
    backend = make_backend(fake.base_url, api_key_env="TESTBED_MISSING_KEY")
    with pytest.raises(BackendUnavailable, match="TESTBED_MISSING_KEY"):
        await backend.start()
    with pytest.raises(BackendUnavailable, match="TESTBED_MISSING_KEY"):
        await backend.generate(GenerateRequest(messages=MESSAGES))
    assert fake.models_requests == [] and fake.chat_requests == []


async def test_key_never_appears_in_exception_messages(fake, make_backend, monkeypatch):
    monkeypatch.setenv("TESTBED_FAKE_KEY", SECRET)
    messages: list[str] = []

    fake.models_status = 401
    with pytest.raises(BackendUnavailable) as info:
        await make_backend(fake.base_url, api_key_env="TESTBED_FAKE_KEY").start()
    assert "TESTBED_FAKE_KEY" in str(info.value)
    messages.append(str(info.value))
    fake.models_status = 200

    fake.models = ["someone-else"]
    with pytest.raises(BackendUnavailable) as info:
        await make_backend(fake.base_url, api_key_env="TESTBED_FAKE_KEY").start()
    messages.append(str(info.value))

    with pytest.raises(BackendUnavailable) as info:
        await make_backend(f"http://127.0.0.1:{dead_port()}/v1", api_key_env="TESTBED_FAKE_KEY").start()
    messages.append(str(info.value))

    for script in (("text", 400, "bad"), ("text", 500, "boom")):
        fake.default = script
        with pytest.raises(BackendError) as info:
            await make_backend(fake.base_url, api_key_env="TESTBED_FAKE_KEY", max_retries=1).generate(
                GenerateRequest(messages=MESSAGES))
        messages.append(str(info.value))
        messages.append(info.value.reason)

    backend = make_backend(fake.base_url, api_key_env="TESTBED_FAKE_KEY")
    with pytest.raises(BackendError) as info:
        await backend.generate(GenerateRequest(messages=MESSAGES, continue_final_message=True))
    messages.append(str(info.value))

    assert len(messages) == 8
    for message in messages:
        assert SECRET not in message
        assert "SECRET" not in message


async def test_a_server_without_tool_calling_stops_the_run_with_the_flags_to_add(fake, make_backend):
    fake.default = ("json", 400, {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                                  "--tool-call-parser to be set", "type": "BadRequestError", "code": 400})
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    backend = make_backend(fake.base_url, max_retries=4)
    with pytest.raises(BackendUnavailable, match="refuses tool calls.*--enable-auto-tool-choice --tool-call-parser.*server.tool_call_parser"):
        await backend.generate(GenerateRequest(messages=MESSAGES, tools=tools))
    assert len(fake.chat_requests) == 1
    fake.default = ("text", 400, "bad request: max_tokens too large")
    with pytest.raises(BackendError) as info:
        await make_backend(fake.base_url).generate(GenerateRequest(messages=MESSAGES, tools=tools))
    assert not isinstance(info.value, BackendUnavailable)
