"""Replica sets over real HTTP servers (the mock OpenAI server): routing, failover, the run's counts."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from helpers import REPO, run_cli, write_yaml

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

from testbed.backends.base import BackendError, BackendUnavailable, GenerateRequest  # noqa: E402
from testbed.backends.factory import BackendPool  # noqa: E402
from testbed.backends.replicas import ReplicaSet  # noqa: E402
from testbed.specs.agent import AgentSpec  # noqa: E402

REQUEST = GenerateRequest([{"role": "user", "content": "What is 2 + 3?"}], max_tokens=8)


def agent(urls: list[str], **extra) -> AgentSpec:
    """An agent spreading over `urls` (short timeouts, as a test wants)."""
    return AgentSpec(name="spread", backend="vllm", model="mock", base_urls=urls, timeout_s=5, concurrency=64, **extra)


async def replica_set(urls: list[str], pool: BackendPool, **extra) -> ReplicaSet:
    """The started backend a run builds for the agent."""
    backend = await pool.backend_for(agent(urls, **extra))
    assert isinstance(backend, ReplicaSet)
    return backend


async def test_requests_go_to_the_replica_with_the_fewest_in_flight():
    async with MockOpenAI(latency_s=0.05) as a, MockOpenAI(latency_s=0.05) as b, BackendPool() as pool:
        backend = await replica_set([a.base_url, b.base_url], pool)
        await asyncio.gather(*(backend.generate(REQUEST) for _ in range(40)))
        assert (len(a.requests), len(b.requests)) == (20, 20)
        assert [(c.served, c.retried, c.out_reason) for c in backend.counts()] == [(20, 0, None), (20, 0, None)]


async def test_a_slow_replica_gets_fewer_requests_than_a_fast_one():
    async with MockOpenAI(latency_s=0.01) as fast, MockOpenAI(latency_s=0.2) as slow, BackendPool() as pool:
        backend = await replica_set([fast.base_url, slow.base_url], pool)
        gate = asyncio.Semaphore(4)

        async def one():
            async with gate:
                await backend.generate(REQUEST)

        await asyncio.gather(*(one() for _ in range(60)))
        assert len(fast.requests) > 3 * len(slow.requests)
        assert len(fast.requests) + len(slow.requests) == 60


async def test_a_replica_that_dies_mid_run_is_taken_out_and_its_requests_are_answered_by_the_others():
    async with MockOpenAI(latency_s=0.02) as a, BackendPool() as pool:
        b = MockOpenAI(latency_s=0.02)
        await b.start()
        backend = await replica_set([a.base_url, b.base_url], pool)
        first = await asyncio.gather(*(backend.generate(REQUEST) for _ in range(10)))
        await b.close()
        later = await asyncio.gather(*(backend.generate(REQUEST) for _ in range(30)))
        assert len(first) + len(later) == 40
        counts = {c.url: c for c in backend.counts()}
        assert counts[b.base_url].out_reason is not None and b.base_url.rsplit("/", 1)[0] in counts[b.base_url].out_reason
        assert counts[b.base_url].retried >= 1
        assert counts[a.base_url].out_reason is None
        assert counts[a.base_url].served + counts[b.base_url].served == 40
        assert len(a.requests) == counts[a.base_url].served


async def test_when_every_replica_is_gone_the_run_stops_naming_each_one():
    async with BackendPool() as pool:
        a, b = MockOpenAI(), MockOpenAI()
        await a.start()
        await b.start()
        backend = await replica_set([a.base_url, b.base_url], pool)
        await a.close()
        await b.close()
        with pytest.raises(BackendUnavailable) as err:
            await backend.generate(REQUEST)
        assert "every replica of spread stopped answering" in err.value.reason
        assert a.base_url in err.value.reason and b.base_url in err.value.reason


async def test_a_replica_unreachable_at_the_start_is_left_out_and_the_others_serve():
    async with MockOpenAI() as a, BackendPool() as pool:
        dead = "http://127.0.0.1:9/v1"
        backend = await replica_set([dead, a.base_url], pool)
        await asyncio.gather(*(backend.generate(REQUEST) for _ in range(5)))
        counts = {c.url: c for c in backend.counts()}
        assert counts[dead].out_reason and "cannot reach" in counts[dead].out_reason
        assert counts[a.base_url].served == 5 == len(a.requests)


async def test_a_request_the_replicas_refuse_for_good_is_an_error_and_not_retried(monkeypatch):
    async with MockOpenAI() as a, MockOpenAI() as b, BackendPool() as pool:
        backend = await replica_set([a.base_url, b.base_url], pool)
        bad = GenerateRequest([{"role": "user", "content": "x"}], continue_final_message=True)
        for replica in backend.replicas:
            replica.backend.capabilities = type(replica.backend.capabilities)(continue_user_turn=False)
        with pytest.raises(BackendError) as err:
            await backend.generate(bad)
        assert not err.value.retryable and "cannot continue the final message" in err.value.reason
        assert a.requests == b.requests == []


def test_bad_replica_specs_name_the_field_and_the_fix():
    from pydantic import ValidationError

    cases = [
        (dict(base_urls=[]), "base_urls", "list the replicas' URLs"),
        (dict(base_urls=["http://a:1/v1", "http://a:1/v1/"]), "base_urls", "list each replica once"),
        (dict(base_urls=["a:1/v1"]), "base_urls", "is not an http(s) URL"),
        (dict(base_url="http://a:1/v1", base_urls=["http://b:1/v1"]), "base_urls", "not both"),
        (dict(backend="litellm", base_urls=["http://b:1/v1"]), "base_urls", "use backend vllm or openai"),
        (dict(backend="openai", base_url="http://b:1/v1", server={"replicas": 2}), "server.replicas", "starts no server"),
    ]
    for fields, where, fix in cases:
        with pytest.raises(ValidationError) as err:
            AgentSpec(**({"name": "a", "backend": "vllm", "model": "m"} | fields))
        assert where in str(err.value) and fix in str(err.value), (fields, str(err.value))
    assert AgentSpec(name="a", backend="openai", model="m", base_urls=["http://a:1/v1", "http://b:1/v1"]).urls == [
        "http://a:1/v1", "http://b:1/v1"]


async def test_a_run_over_two_replicas_stores_and_reports_what_each_served(tmp_path: Path):
    async with MockOpenAI(latency_s=0.01) as a, MockOpenAI(latency_s=0.01) as b:
        write_yaml(tmp_path / "spread.yaml", {"name": "spread", "backend": "vllm", "model": "mock", "base_urls": [a.base_url, b.base_url],
                                              "timeout_s": 5, "concurrency": 8})
        (tmp_path / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
        spec = write_yaml(tmp_path / "probe.yaml", {"kind": "probe", "name": "spread-probe", "dataset": "gsm8k", "items": {"limit": 4},
                                                    "assistant": "spread.yaml", "user": "spread.yaml", "user_modes": ["instructed"],
                                                    "user_prompt_file": "user.md", "temperatures": [0.0, 1.0], "max_tokens": 16})
        store = tmp_path / "store.sqlite"
        ran = await asyncio.to_thread(run_cli, "run", str(spec), "--store", str(store), "--quiet")
        assert ran.returncode == 0, ran.stderr
        report = await asyncio.to_thread(run_cli, "report", "spread-probe", "--store", str(store))
    assert report.returncode == 0, report.stderr
    assert "replicas: requests served" in report.stdout
    served = len(a.requests) + len(b.requests)
    assert len(a.requests) > 0 and len(b.requests) > 0
    rows = [line for line in report.stdout.splitlines() if "127.0.0.1" in line]
    assert len(rows) == 2
    numbers = [int(cell) for row in rows for cell in row.replace("│", " ").split() if cell.isdigit()]
    assert sum(numbers[0::2]) == served


def test_each_managed_replica_on_a_gpu_build_gets_its_own_gpus(monkeypatch):
    from testbed.backends import factory, vllm_server

    spec = AgentSpec(name="g", backend="vllm", model="m", server={"replicas": 2, "tensor_parallel_size": 2})
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "gpu")
    assert [factory.replica_devices(spec, k, "") for k in (0, 1)] == [["0", "1"], ["2", "3"]]
    assert [factory.replica_devices(spec, k, "4,5,6,7") for k in (0, 1)] == [["4", "5"], ["6", "7"]]
    with pytest.raises(BackendUnavailable) as err:
        factory.replica_devices(spec, 0, "0,1,2")
    assert "need 4 GPUs" in err.value.reason and "lower server.replicas" in err.value.reason
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "cpu")
    assert factory.replica_devices(spec, 1, "0,1,2,3") is None
