"""The HTTP backend against every kind of fault: each ends as a completion or a BackendError with its reason."""

from __future__ import annotations

import asyncio
import time

import pytest

from fault_server import LOW_LEVEL, MALFORMED, MODEL, Fault, FaultServer, ok
from testbed.backends.base import BackendError, BackendUnavailable, GenerateRequest
from testbed.backends.openai_http import OpenAICompatibleBackend

ASK = GenerateRequest(messages=[{"role": "user", "content": "What is 2 + 2?"}])


def backend(server: FaultServer, **kw) -> OpenAICompatibleBackend:
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("backoff_cap_s", 0.02)
    kw.setdefault("timeout_s", 0.5)
    kw.setdefault("connect_timeout_s", 0.5)
    kw.setdefault("max_retries", 2)
    return OpenAICompatibleBackend(base_url=server.base_url, model=MODEL, **kw)


async def generate(server: FaultServer, request: GenerateRequest = ASK, **kw):
    b = backend(server, **kw)
    try:
        return await b.generate(request)
    finally:
        await b.close()


ALL_FAULTS = [*MALFORMED, *[k for k in LOW_LEVEL if k != "hang"], "status_500", "non_utf8_500", "markup_500"]


def fault_named(name: str) -> Fault:
    if name == "status_500":
        return Fault("raw", status=500, body=b'{"error": "overloaded"}')
    if name == "non_utf8_500":
        return Fault("raw", status=500, body=b"\xff\xfe\x80 broken \xc3")
    if name == "markup_500":
        return Fault("raw", status=500, body=b"[bold red]boom[/] [/nope] :m: [link=x]y")
    return Fault(name)


@pytest.mark.parametrize("name", ALL_FAULTS)
async def test_a_persistent_fault_is_a_backend_error_with_a_reason(name):
    with FaultServer(lambda r: fault_named(name)) as server:
        with pytest.raises(BackendError) as info:
            await generate(server)
        assert not isinstance(info.value, BackendUnavailable)
        assert "gave up after 3 attempts" in info.value.reason
        assert server.chat_count() == 3
        assert server.base_url in info.value.reason
        assert "TimeoutError: " not in info.value.reason and not info.value.reason.endswith(": ")


@pytest.mark.parametrize("name", ALL_FAULTS)
async def test_a_transient_fault_is_retried_and_the_reply_kept(name):
    with FaultServer(lambda r: fault_named(name) if r.seen == 1 else ok("fine")) as server:
        completion = await generate(server)
        assert completion.text == "fine"
        assert completion.attempts == 2


async def test_empty_content_is_a_generation_not_a_fault():
    with FaultServer(lambda r: ok("")) as server:
        completion = await generate(server)
        assert completion.text == "" and completion.attempts == 1


async def test_retry_after_is_honoured():
    with FaultServer(lambda r: Fault("raw", status=429, headers={"Retry-After": "1"}) if r.seen == 1 else ok("late")) as server:
        started = time.perf_counter()
        completion = await generate(server)
        assert completion.text == "late"
        assert time.perf_counter() - started >= 1.0


async def test_a_retry_after_beyond_the_cap_gives_up_with_the_reason():
    with FaultServer(lambda r: Fault("raw", status=429, headers={"Retry-After": "3600"})) as server:
        with pytest.raises(BackendError, match="retry after 3600s"):
            await generate(server)
        assert server.chat_count() == 1


async def test_a_rejected_key_stops_the_backend_without_sending_it_again(monkeypatch):
    monkeypatch.setenv("FAULT_KEY", "sk-fault-0123456789")
    with FaultServer(lambda r: ok() if r.number < 2 else Fault("raw", status=401, body=b'{"error": "bad key"}')) as server:
        b = backend(server, api_key_env="FAULT_KEY")
        try:
            await b.generate(ASK)
            await b.generate(ASK)
            with pytest.raises(BackendUnavailable, match="refused the API key.*FAULT_KEY"):
                await b.generate(ASK)
            sent = server.chat_count()
            for _ in range(5):
                with pytest.raises(BackendUnavailable):
                    await b.generate(ASK)
            assert server.chat_count() == sent == 3
        finally:
            await b.close()


async def test_a_slow_but_alive_server_is_retried_once_after_a_timeout():
    with FaultServer(lambda r: Fault("hang")) as server:
        started = time.perf_counter()
        with pytest.raises(BackendError) as info:
            await generate(server, timeout_s=0.3, max_retries=4)
        assert not isinstance(info.value, BackendUnavailable)
        assert "timed out after 0.3s" in info.value.reason
        assert server.chat_count() == 2
        assert time.perf_counter() - started < 3


async def test_a_hung_server_stops_the_run_after_one_timeout():
    with FaultServer(lambda r: Fault("hang"), models_fault=Fault("hang")) as server:
        started = time.perf_counter()
        b = backend(server, timeout_s=0.3)
        try:
            with pytest.raises(BackendUnavailable, match="stopped answering.*did not answer within"):
                await b.generate(ASK)
            with pytest.raises(BackendUnavailable):
                await b.generate(ASK)
        finally:
            await b.close()
        assert server.chat_count() == 1
        assert time.perf_counter() - started < 3


async def test_a_server_that_died_stops_the_run(tmp_path):
    server = FaultServer(lambda r: Fault("close")).start()
    b = backend(server)
    try:
        await b.start()
        server.stop()
        with pytest.raises(BackendUnavailable, match="stopped answering.*cannot reach"):
            await asyncio.wait_for(b.generate(ASK), 10)
    finally:
        await b.close()
