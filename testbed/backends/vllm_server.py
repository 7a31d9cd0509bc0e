"""Start, watch and stop a vLLM OpenAI server process for one model.

The server is tied to the testbed process however the testbed ends. `stop` ends the server's whole
session (the API server and the engine-core and worker processes it spawned), and runs on a normal end,
on errors, on Ctrl-C and SIGTERM, on an interrupt during start-up and at interpreter exit; for ends no
code of the testbed sees (`kill -9`, a second interrupt cutting clean-up short) each server has a watchdog
process that ends the session within seconds of the testbed's death (testbed.backends.server_watchdog).
"""

from __future__ import annotations

import atexit
import importlib.metadata
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from testbed.backends.base import BackendUnavailable
from testbed.backends.embedded import cache_root
from testbed.backends.server_watchdog import Watchdog, end_session
from testbed.backends.tool_call_text import TOLERANT_PARSER

CPU_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "2",
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
}
NO_CHUNKED_PREFILL = "--no-enable-chunked-prefill"
"""Passed on CPU: vllm-cpu 0.32 kills its engine when a seeded request's prompt is prefilled in chunks
("CPU Generator does not use offset": the rewind of a discarded sample needs a generator offset that
CPU generators lack). Every simulated-user turn is seeded, so a burst of them after a resume crashed
the server; whole-prompt prefill never discards a sample. GPU builds keep chunked prefill."""
QUIET_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "TRANSFORMERS_OFFLINE": "1"}
TOLERANT_PLUGIN = Path(__file__).resolve().with_name("vllm_tool_parser_plugin.py")
"""The tolerant parser's vLLM plugin file in the installed package: what `--tool-parser-plugin` names for
`--tool-call-parser tolerant` (testbed.backends.tool_call_text)."""


def tool_calling_flags(parser: str = TOLERANT_PARSER, plugin: str | Path | None = None) -> list[str]:
    """The vLLM flags that turn tool calling on with `parser`: the tolerant parser brings its plugin file, a parser of
    your own brings `plugin` (absolute, since vLLM reads a relative path against its working directory)."""
    chosen = plugin if plugin is not None else TOLERANT_PLUGIN if parser == TOLERANT_PARSER else None
    flags = ["--enable-auto-tool-choice", "--tool-call-parser", parser]
    return flags + (["--tool-parser-plugin", str(chosen)] if chosen is not None else [])


def vllm_flavour() -> str:
    """`cpu` when the vllm-cpu build is installed, `gpu` for regular vllm, `missing` otherwise."""
    for dist, flavour in (("vllm-cpu", "cpu"), ("vllm", "gpu")):
        try:
            importlib.metadata.version(dist)
            return flavour
        except importlib.metadata.PackageNotFoundError:
            continue
    return "missing"


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _file_name_part(name: str) -> str:
    """A served name made safe for a file name: a model given as a folder path (`/models/x`) has slashes."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


_RUNNING: dict[int, "VLLMServer"] = {}
"""Servers started and not yet stopped, stopped at interpreter exit by `_stop_running`."""


def _stop_running() -> None:
    for server in list(_RUNNING.values()):
        server.stop()


atexit.register(_stop_running)


@dataclass
class VLLMServer:
    """A vLLM OpenAI server process the testbed owns for the length of a run.

    The scale options (`tensor_parallel_size`, `data_parallel_size`, `gpu_memory_utilization`) become
    flags only when they differ from vLLM's defaults, so a CPU command line never changes. For several
    managed replicas on one GPU machine, the replica code gives each server its own devices through
    `visible_devices` (set as CUDA_VISIBLE_DEVICES, `gpus` of them each); `env` adds any other variables.
    """

    model_path: str
    served_name: str
    max_model_len: int = 2048
    dtype: str | None = None
    port: int | None = None
    extra_args: list[str] = field(default_factory=list)
    startup_timeout_s: float = 600.0
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    gpu_memory_utilization: float | None = None
    tool_call_parser: str | None = None
    tool_parser_plugin: str | None = None
    """An absolute plugin file registering `tool_call_parser`; unset, the tolerant parser brings its own and any other
    parser is one of vLLM's."""
    visible_devices: list[int | str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    watchdog: Watchdog | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.visible_devices is not None and len(self.visible_devices) < self.gpus:
            raise ValueError(
                f"a server with tensor parallel {self.tensor_parallel_size} x data parallel {self.data_parallel_size} "
                f"needs {self.gpus} GPUs, but visible_devices names {len(self.visible_devices)}"
            )

    @property
    def gpus(self) -> int:
        """GPUs this server occupies: tensor × data parallel (pipeline stages passed in `extra_args` add to it)."""
        return self.tensor_parallel_size * self.data_parallel_size

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of the running server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The exact command line that starts the server (the `vllm` CLI is absent in vllm-cpu)."""
        flavour = vllm_flavour()
        dtype = self.dtype or ("float32" if flavour == "cpu" else "auto")
        cmd = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--model", self.model_path, "--served-model-name", self.served_name,
            "--dtype", dtype, "--max-model-len", str(self.max_model_len),
            "--host", "127.0.0.1", "--port", str(self.port),
        ]
        if self.tensor_parallel_size != 1:
            cmd += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.data_parallel_size != 1:
            cmd += ["--data-parallel-size", str(self.data_parallel_size)]
        if self.gpu_memory_utilization is not None:
            cmd += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.tool_call_parser is not None:
            cmd += tool_calling_flags(self.tool_call_parser, self.tool_parser_plugin)
        if flavour == "cpu":
            cmd.append("--enforce-eager")
            if not any("chunked-prefill" in arg for arg in self.extra_args):
                cmd.append(NO_CHUNKED_PREFILL)
        return cmd + list(self.extra_args)

    def environment(self) -> dict[str, str]:
        """The server's environment: ours, kept offline and quiet, CPU settings on the CPU build, then `env`,
        then CUDA_VISIBLE_DEVICES from `visible_devices`, which wins so each replica sees only its own GPUs."""
        env = {**os.environ, **QUIET_ENV}
        if vllm_flavour() == "cpu":
            env = {**CPU_ENV, **env}
        env.update(self.env)
        if self.visible_devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(d) for d in self.visible_devices)
        return env

    def start(self) -> None:
        """Launch the server and block until /health answers, or raise with the log's tail."""
        if vllm_flavour() == "missing":
            raise BackendUnavailable("vLLM is not installed: install the project with the `cpu` or `gpu` extra")
        self.port = self.port or free_port()
        logs = cache_root() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"vllm-{_file_name_part(self.served_name)}-{self.port}.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=self.environment(), start_new_session=True
            )
        _RUNNING[id(self)] = self
        try:
            self.watchdog = Watchdog(self.process.pid)
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            process = self.process
            if process is None:
                raise BackendUnavailable(f"vLLM server for {self.model_path} was stopped during start-up")
            if process.poll() is not None:
                raise BackendUnavailable(
                    f"vLLM server for {self.model_path} exited with code {process.returncode} during start-up; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1.0)
        raise BackendUnavailable(
            f"vLLM server at {url} was not healthy after {self.startup_timeout_s:g}s; log {self.log_path}"
        )

    def diagnosis(self) -> str | None:
        """Why the server stopped answering, when its process has exited: the exit code, the log, the last error in it."""
        if self.process is None or self.process.poll() is None:
            return None
        errors = [line for line in self.log_tail(400).splitlines() if "Error" in line or "error" in line]
        last = errors[-1].split("] ", 1)[-1].strip() if errors else "no error line"
        return f"the vLLM server the testbed started exited with code {self.process.returncode} (log {self.log_path}; last error: {last})"

    def log_tail(self, lines: int = 25) -> str:
        """The last lines the server wrote, for error messages."""
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the server and everything it spawned: SIGTERM to every process of its session, SIGKILL to any left
        once the API server has gone or after `grace_s`; then dismiss its watchdog. Idempotent, and also run for a
        server whose API server already exited, so an engine core it left behind is ended too."""
        proc, self.process = self.process, None
        watchdog, self.watchdog = self.watchdog, None
        _RUNNING.pop(id(self), None)
        if proc is not None:
            end_session(proc.pid, grace_s, reap=proc)
        if watchdog is not None:
            watchdog.release()
