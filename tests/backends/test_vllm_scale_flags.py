"""The scale options reach `vllm serve` as flags only when set, and each replica can be given its own GPUs."""

from __future__ import annotations

import pytest

from testbed.backends import vllm_server
from testbed.backends.vllm_server import VLLMServer

SCALE_FLAGS = ("--tensor-parallel-size", "--data-parallel-size", "--gpu-memory-utilization")


def value_of(cmd: list[str], flag: str) -> str:
    assert cmd.count(flag) == 1, f"{flag} given once"
    return cmd[cmd.index(flag) + 1]


@pytest.mark.parametrize("flavour", ["cpu", "gpu"])
def test_defaults_emit_no_scale_flag(monkeypatch, flavour):
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: flavour)
    cmd = VLLMServer("/m", "m", port=8000).command()
    assert not set(SCALE_FLAGS) & set(cmd)
    assert value_of(cmd, "--model") == "/m" and value_of(cmd, "--port") == "8000"


def test_set_options_become_their_vllm_flags_before_the_extra_args(monkeypatch):
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "gpu")
    server = VLLMServer(
        "/m", "m", port=8000, dtype="bfloat16", max_model_len=8192, tensor_parallel_size=2, data_parallel_size=4,
        gpu_memory_utilization=0.85, extra_args=["--enable-prefix-caching"],
    )
    cmd = server.command()
    assert value_of(cmd, "--tensor-parallel-size") == "2"
    assert value_of(cmd, "--data-parallel-size") == "4"
    assert value_of(cmd, "--gpu-memory-utilization") == "0.85"
    assert value_of(cmd, "--dtype") == "bfloat16" and value_of(cmd, "--max-model-len") == "8192"
    assert cmd[-1] == "--enable-prefix-caching"
    assert server.gpus == 8


def test_the_pool_passes_the_agents_scale_options_to_its_server():
    from testbed.backends.factory import BackendPool
    from testbed.specs.agent import AgentSpec

    spec = AgentSpec(name="a", backend="vllm", model="/models/m", server={
        "tensor_parallel_size": 2, "data_parallel_size": 2, "gpu_memory_utilization": 0.5})
    server = BackendPool._server(spec, "/models/m", 0)
    assert (server.tensor_parallel_size, server.data_parallel_size, server.gpu_memory_utilization) == (2, 2, 0.5)


def test_visible_devices_pin_a_server_to_its_gpus_over_any_inherited_setting(monkeypatch):
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "gpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    env = VLLMServer("/m", "m", tensor_parallel_size=2, visible_devices=[2, 3], env={"NCCL_DEBUG": "WARN"}).environment()
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3" and env["NCCL_DEBUG"] == "WARN"
    assert env["HF_HUB_OFFLINE"] == "1", "the server stays offline"
    assert VLLMServer("/m", "m").environment()["CUDA_VISIBLE_DEVICES"] == "0,1,2,3", "unset leaves it alone"


def test_too_few_devices_for_the_parallelism_is_refused_when_built():
    with pytest.raises(ValueError, match="needs 4 GPUs, but visible_devices names 2"):
        VLLMServer("/m", "m", tensor_parallel_size=2, data_parallel_size=2, visible_devices=[0, 1])
