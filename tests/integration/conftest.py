"""One real vLLM server with the embedded model, shared by the integration tests of a session."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import write_yaml


@pytest.fixture(scope="session")
def vllm_server():
    """Start the embedded model on vLLM once (tool calling on, for τ² tasks); stop it when the session ends."""
    from testbed.backends.embedded import EMBEDDED_NAME, prepare_embedded_model
    from testbed.backends.vllm_server import VLLMServer, vllm_flavour

    if vllm_flavour() == "missing":
        pytest.fail("vLLM is not installed; run the tests through scripts/test.sh, which installs it")
    server = VLLMServer(model_path=str(prepare_embedded_model()), served_name=EMBEDDED_NAME, startup_timeout_s=900,
                        tool_call_parser="hermes")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server_agent(vllm_server, tmp_path: Path):
    """An agent spec that reuses the session's vLLM server."""
    return write_yaml(tmp_path / "served.yaml", {
        "name": "smollm2-served", "backend": "vllm", "model": "smollm2-135m-instruct",
        "base_url": vllm_server.base_url, "sampling": {"temperature": 0.0, "max_tokens": 48}, "concurrency": 16,
    })
