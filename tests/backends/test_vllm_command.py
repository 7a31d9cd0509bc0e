"""The managed vLLM server's command line: what the CPU build needs to stay up."""

from __future__ import annotations

from testbed.backends import vllm_server
from testbed.backends.vllm_server import NO_CHUNKED_PREFILL, VLLMServer


def test_the_cpu_build_prefills_whole_prompts_unless_told_otherwise(monkeypatch):
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "cpu")
    cmd = VLLMServer("/m", "m", port=8000).command()
    assert NO_CHUNKED_PREFILL in cmd and "--enforce-eager" in cmd and cmd[cmd.index("--dtype") + 1] == "float32"
    chosen = VLLMServer("/m", "m", port=8000, extra_args=["--enable-chunked-prefill"]).command()
    assert NO_CHUNKED_PREFILL not in chosen and chosen[-1] == "--enable-chunked-prefill", "the spec's own choice wins"


def test_the_gpu_build_keeps_its_defaults(monkeypatch):
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "gpu")
    cmd = VLLMServer("/m", "m", port=8000).command()
    assert NO_CHUNKED_PREFILL not in cmd and "--enforce-eager" not in cmd and cmd[cmd.index("--dtype") + 1] == "auto"


def test_a_server_that_died_says_how_and_where_its_log_is(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "vllm.log"
    log.write_text("INFO ready\n(EngineCore pid=1) ERROR 12-01 [core.py:1] RuntimeError: Worker failed with error 'boom'\nINFO: Finished\n")
    server = VLLMServer("/m", "m", port=8000)
    server.log_path = log
    assert server.diagnosis() is None, "not started: nothing to say"
    server.process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    server.process.wait()
    said = server.diagnosis()
    assert "exited with code 3" in said and str(log) in said and "Worker failed with error 'boom'" in said
