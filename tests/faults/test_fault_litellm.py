"""The litellm backend over the fault server: unreadable replies and rejected keys end clearly, keys never show."""

from __future__ import annotations

import pytest

from fault_server import Fault, FaultServer, ok
from testbed.backends.base import BackendError, BackendUnavailable, GenerateRequest
from testbed.backends.litellm_backend import LiteLLMBackend

ASK = GenerateRequest([{"role": "user", "content": "ping"}], max_tokens=5)
SECRET = "sk-litellm-SECRET-42424242"


async def generate(server: FaultServer, monkeypatch):
    monkeypatch.setenv("LITELLM_FAULT_KEY", SECRET)
    backend = LiteLLMBackend(model="openai/fault-model", base_url=server.base_url, api_key_env="LITELLM_FAULT_KEY", max_retries=0)
    await backend.start()
    return await backend.generate(ASK)


async def test_a_good_reply_reads(monkeypatch):
    with FaultServer(lambda r: ok("pong")) as server:
        assert (await generate(server, monkeypatch)).text == "pong"


@pytest.mark.parametrize("kind", ["null_content", "int_content", "str_tokens"])
async def test_an_unreadable_reply_is_a_backend_error(kind, monkeypatch):
    with FaultServer(lambda r: Fault(kind)) as server:
        with pytest.raises(BackendError) as info:
            await generate(server, monkeypatch)
    assert not isinstance(info.value, BackendUnavailable)
    assert SECRET not in info.value.reason


async def test_an_echoed_key_is_redacted(monkeypatch):
    with FaultServer(lambda r: Fault("echo_auth", status=500)) as server:
        with pytest.raises(BackendError) as info:
            await generate(server, monkeypatch)
    assert SECRET not in info.value.reason and "fault-model" in info.value.reason


async def test_a_rejected_key_stops_the_run(monkeypatch):
    with FaultServer(lambda r: Fault("raw", status=401, body=b'{"error": {"message": "invalid key"}}')) as server:
        with pytest.raises(BackendUnavailable, match="LITELLM_FAULT_KEY"):
            await generate(server, monkeypatch)
