"""The managed server's scale options: every bad value is refused with the field that holds it and a fix."""

from __future__ import annotations

import pytest
import yaml

from testbed.specs.errors import SpecError
from testbed.specs.loader import load_agent


def agent_file(tmp_path, **server):
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"name": "a", "backend": "vllm", "model": "embedded", "server": server}))
    return path


def refusal(tmp_path, **server) -> SpecError:
    path = agent_file(tmp_path, **server)
    with pytest.raises(SpecError) as caught:
        load_agent(path)
    assert caught.value.path == str(path)
    return caught.value


@pytest.mark.parametrize("field, value, fix", [
    ("tensor_parallel_size", 0, "at least 1"),
    ("data_parallel_size", -2, "at least 1"),
    ("gpu_memory_utilization", 0, "fraction above 0 and at most 1"),
    ("gpu_memory_utilization", 1.2, "fraction above 0 and at most 1"),
    ("dtype", "fp8", "auto, half, float16, bfloat16, float, float32"),
])
def test_a_bad_scale_value_names_its_field_and_the_fix(tmp_path, field, value, fix):
    error = refusal(tmp_path, **{field: value})
    assert error.field == f"server.{field}"
    assert fix in error.fix and repr(value).strip("'") in error.problem


@pytest.mark.parametrize("args, owner", [
    (["--tensor-parallel-size", "2"], "server.tensor_parallel_size"),
    (["-tp", "2"], "server.tensor_parallel_size"),
    (["--data-parallel-size=2"], "server.data_parallel_size"),
    (["-dp", "2"], "server.data_parallel_size"),
    (["--gpu_memory_utilization", "0.5"], "server.gpu_memory_utilization"),
    (["--device-memory-utilization", "0.5"], "server.gpu_memory_utilization"),
    (["--enable-prefix-caching", "--max-model-len", "4096"], "server.max_model_len"),
    (["--dtype", "half"], "server.dtype"),
    (["--port=9000"], "server.port"),
])
def test_an_extra_flag_that_a_field_sets_is_refused_naming_that_field(tmp_path, args, owner):
    error = refusal(tmp_path, extra_args=args)
    assert error.field == "server.extra_args"
    assert owner in error.problem and f"set {owner} instead" in error.fix


@pytest.mark.parametrize("args, fix", [
    (["--model", "/elsewhere"], "agent's `model`"),
    (["--served-model-name", "x"], "agent's `model`"),
    (["--host", "0.0.0.0"], "base_url"),
])
def test_flags_the_testbed_sets_itself_are_refused_with_where_to_say_it(tmp_path, args, fix):
    error = refusal(tmp_path, extra_args=args)
    assert error.field == "server.extra_args" and args[0] in error.problem and fix in error.fix


def test_good_scale_options_load_and_count_the_gpus_one_server_takes(tmp_path):
    spec = load_agent(agent_file(
        tmp_path, tensor_parallel_size=2, data_parallel_size=3, gpu_memory_utilization=0.85, dtype="bfloat16",
        extra_args=["--enable-prefix-caching", "--pipeline-parallel-size", "2"],
    )).spec.server
    assert (spec.tensor_parallel_size, spec.data_parallel_size, spec.gpu_memory_utilization, spec.gpus) == (2, 3, 0.85, 6)


def test_scale_options_at_their_defaults_leave_the_stored_spec_as_before(tmp_path):
    default = load_agent(agent_file(tmp_path)).spec.server.model_dump(mode="json")
    assert not {"replicas", "tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization"} & set(default)
    scaled = load_agent(agent_file(tmp_path, tensor_parallel_size=2)).spec.server.model_dump(mode="json")
    assert scaled["tensor_parallel_size"] == 2, "a value that changes the server is part of the run's identity"
