"""Turn agent specs into backends, starting each managed vLLM server once and stopping it after."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from testbed.backends.base import Backend, BackendUnavailable, Capabilities
from testbed.backends.catalogue import catalogue_model
from testbed.backends.model_prep import ModelPrepError, is_prepared, locate_parts, model_dir, prepare_model
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.specs.agent import AgentSpec
from testbed.specs.registries import BACKENDS, BackendEntry

VLLM_CAPABILITIES = Capabilities(continue_user_turn=True, structured_output=True)
"""What a vLLM server can do, for code that builds an OpenAI-compatible backend on one directly."""


def served_model_name(spec: AgentSpec) -> str:
    """The name the model is requested under: a catalogue model's own name (also for an alias such as `embedded`)."""
    entry = catalogue_model(spec.model)
    return entry.name if entry is not None else spec.model


def tool_call_parser_of(spec: AgentSpec) -> str | None:
    """The tool parser a managed server for the agent starts with: the spec's `server.tool_call_parser`, else its
    catalogue model's own (the small models' `tolerant`), else none (no tool calling)."""
    if spec.server.tool_call_parser is not None:
        return spec.server.tool_call_parser
    entry = catalogue_model(spec.model)
    return entry.tool_call_parser if entry is not None else None


def tool_parser_plugin_of(spec: AgentSpec) -> str | None:
    """The plugin file the agent's managed server loads, absolute: the spec's own (made absolute against its spec
    file by the loader), else none (the tolerant parser's own file is added with its flags, testbed.backends.vllm_server).
    A relative path here came from a spec built in code, which has no folder to read it against: refused."""
    plugin = spec.server.tool_parser_plugin
    if plugin is None:
        return None
    if not plugin.is_absolute():
        raise BackendUnavailable(f"agent {spec.name}: server.tool_parser_plugin {str(plugin)[:200]!r} is relative and the spec has "
                                 "no file to read it against: give an absolute path (or load the spec from its file)")
    return str(plugin)


def capabilities_of(spec: AgentSpec) -> Capabilities:
    """What the agent's backend can do, known without contacting it.

    The backend's declared capabilities, with those it lets a spec declare (an OpenAI-compatible
    server's, litellm's structured output) taken from the spec's `capabilities:` block when given.
    """
    entry = BACKENDS.entry(spec.backend)
    values = dict(entry.capabilities)
    if spec.capabilities is not None:
        values.update({name: getattr(spec.capabilities, name) for name in entry.declarable})
    return Capabilities(**values)


def managed_model_problem(spec: AgentSpec) -> str | None:
    """Why a managed vLLM server could not load the agent's model, or None when it can.

    Checked before any server starts: a catalogue model needs its packages installed (it is then
    converted when the server first starts); any other model that is neither a local folder nor
    in the local Hugging Face cache cannot load while the hub is offline.
    """
    if not spec.managed or Path(spec.model).is_dir():
        return None
    entry = catalogue_model(spec.model)
    if entry is not None:
        if is_prepared(model_dir(entry)) or locate_parts(entry) is not None:
            return None
        return f"catalogue model {entry.name!r} is not prepared: run `testbed prepare-model {entry.name}` once (it installs its packages)"
    if os.environ.get("HF_HUB_OFFLINE", "0") in ("0", "false", "False", ""):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(spec.model, "config.json"), str):
            return None
    except Exception:  # an id that is not a valid repo name is just as unknown
        pass
    return (
        f"model {spec.model!r} is not `embedded`, not a local folder and not in the local Hugging Face cache, "
        "and the hub is offline (HF_HUB_OFFLINE=1)"
    )


async def _model_path(spec: AgentSpec) -> str:
    """What the server loads: a catalogue model's converted folder (converted now if needed), else the spec's model."""
    entry = catalogue_model(spec.model)
    if entry is None:
        return spec.model
    try:
        return str(await asyncio.to_thread(prepare_model, entry, install=False))
    except ModelPrepError as exc:
        raise BackendUnavailable(f"agent {spec.name}: {exc}") from None


def replica_devices(spec: AgentSpec, index: int, visible: str | None = None) -> list[str] | None:
    """The GPUs replica `index` of a managed server gets on a GPU build (its own `server.gpus` of them, in the order
    CUDA_VISIBLE_DEVICES lists them, else 0, 1, ...); None for a single server or the CPU build, which keep the
    environment's devices."""
    from testbed.backends.vllm_server import vllm_flavour

    if spec.server.replicas == 1 or vllm_flavour() != "gpu":
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    per = spec.server.gpus
    devices = [d.strip() for d in visible.split(",") if d.strip()] if visible else [str(k) for k in range(per * spec.server.replicas)]
    if len(devices) < per * spec.server.replicas:
        raise BackendUnavailable(
            f"agent {spec.name}: {spec.server.replicas} replicas of {per} GPU(s) each need {per * spec.server.replicas} GPUs, "
            f"CUDA_VISIBLE_DEVICES lists {len(devices)}: lower server.replicas or make more GPUs visible"
        )
    return devices[index * per:(index + 1) * per]


def _server_key(spec: AgentSpec) -> tuple:
    """Agents with the same managed model and server settings share the pool's servers."""
    return (spec.model, spec.server.model_dump_json())


class BackendPool:
    """Owns the backends of a run and the vLLM servers started for them.

    Agents with the same managed model and server settings share one server. Use as an async
    context manager: servers are stopped on exit, whether the run finished, failed or was cancelled.
    """

    def __init__(self) -> None:
        self._servers: dict[tuple, list] = {}
        self._backends: list[Backend] = []

    async def backend_for(self, spec: AgentSpec) -> Backend:
        """A started backend for the agent, built by its registered builder; a managed server starts on first need."""
        backend: Backend = await BACKENDS.entry(spec.backend).build(spec, self)
        self._backends.append(backend)
        await backend.start()
        return backend

    async def managed_urls(self, spec: AgentSpec) -> list[str]:
        """The URLs of the vLLM servers this pool runs for the agent's model and server settings (`server.replicas`
        of them, started together, once)."""
        key = _server_key(spec)
        if key not in self._servers:
            path = await _model_path(spec)
            servers = [self._server(spec, path, index) for index in range(spec.server.replicas)]
            self._servers[key] = servers
            await asyncio.gather(*(asyncio.to_thread(server.start) for server in servers))
        return [server.base_url for server in self._servers[key]]

    @staticmethod
    def _server(spec: AgentSpec, path: str, index: int):
        """Replica `index` of the agent's managed server (its own port)."""
        from testbed.backends.vllm_server import VLLMServer

        port = spec.server.port + index if spec.server.port is not None else None
        return VLLMServer(visible_devices=replica_devices(spec, index),
            model_path=path, served_name=served_model_name(spec), max_model_len=spec.server.max_model_len,
            dtype=spec.server.dtype, port=port, extra_args=spec.server.extra_args,
            startup_timeout_s=spec.server.startup_timeout_s, tensor_parallel_size=spec.server.tensor_parallel_size,
            data_parallel_size=spec.server.data_parallel_size, gpu_memory_utilization=spec.server.gpu_memory_utilization,
            tool_call_parser=tool_call_parser_of(spec), tool_parser_plugin=tool_parser_plugin_of(spec),
        )

    def diagnosis(self, spec: AgentSpec, index: int = 0) -> Callable[[], str | None]:
        """What to tell the user when replica `index` of the server this pool runs for the agent stops answering."""
        key = _server_key(spec)
        return lambda: self._servers[key][index].diagnosis() if key in self._servers else None

    @property
    def servers(self) -> Iterable[object]:
        """The servers this pool started."""
        return [server for replicas in self._servers.values() for server in replicas]

    async def close(self) -> None:
        """Close every backend and stop every server this pool started: the servers together, shielded, so a backend
        failing to close or an interrupt arriving meanwhile cannot cut a server's stop short."""
        try:
            for backend in self._backends:
                await backend.close()
        finally:
            servers = list(self.servers)
            self._servers.clear()
            if servers:
                await asyncio.shield(asyncio.gather(*(asyncio.to_thread(server.stop) for server in servers)))

    async def __aenter__(self) -> "BackendPool":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def build_openai_compatible(spec: AgentSpec, pool: BackendPool) -> Backend:
    """vLLM or any OpenAI-compatible server: the spec's `base_url`, or a server the pool starts; several
    (`base_urls`, `server.replicas`) make a replica set routing to the least loaded."""
    managed = not spec.urls
    urls = await pool.managed_urls(spec) if managed else spec.urls
    if len(urls) == 1:
        return _http_backend(spec, urls[0], spec.max_retries, pool.diagnosis(spec) if managed else None)
    from testbed.backends.replicas import Replica, ReplicaSet

    replicas = [Replica(_http_backend(spec, url, 0, pool.diagnosis(spec, k) if managed else None), url) for k, url in enumerate(urls)]
    return ReplicaSet(spec.name, served_model_name(spec), capabilities_of(spec), replicas, max_retries=spec.max_retries)


def _http_backend(spec: AgentSpec, url: str, max_retries: int, diagnose) -> OpenAICompatibleBackend:
    """One server's backend; a replica's retries are the set's (sent elsewhere), so it makes none of its own."""
    return OpenAICompatibleBackend(
        base_url=url, model=served_model_name(spec), name=spec.name, api_key_env=spec.api_key_env,
        capabilities=capabilities_of(spec), concurrency=spec.concurrency, timeout_s=spec.timeout_s,
        max_retries=max_retries, diagnose=diagnose, max_reply_bytes=spec.max_reply_bytes,
    )


async def build_litellm(spec: AgentSpec, pool: BackendPool) -> Backend:
    """A provider through litellm, imported only here so the package stays optional."""
    from testbed.backends.litellm_backend import LiteLLMBackend

    return LiteLLMBackend(model=spec.model, name=spec.name, api_key_env=spec.api_key_env, base_url=spec.base_url,
                          concurrency=spec.concurrency, timeout_s=spec.timeout_s, max_retries=spec.max_retries,
                          structured_output=capabilities_of(spec).structured_output)


async def build_scripted(spec: AgentSpec, pool: BackendPool) -> Backend:
    """The test double replaying the spec's `outputs` in a cycle (an empty reply when none are given)."""
    from testbed.backends.scripted import ScriptedBackend

    outputs = list(spec.outputs or [""])
    counter = iter(range(1 << 62))
    return ScriptedBackend(lambda _: outputs[next(counter) % len(outputs)], name=spec.name, model=spec.model)


VLLM = BackendEntry("vllm", build_openai_compatible, capabilities={"continue_user_turn": True, "structured_output": True},
                    managed=True, replicas=True)
"""vLLM: a server the testbed starts (managed) unless the spec names one; continues the user turn."""
OPENAI = BackendEntry("openai", build_openai_compatible, capabilities={"continue_user_turn": False, "structured_output": False},
                      declarable=("continue_user_turn", "structured_output"),
                      requires={"base_url": "add base_url: http://HOST:PORT/v1"}, replicas=True)
"""Any OpenAI-compatible server at the spec's base_url; what it can do is declared in the spec."""
LITELLM = BackendEntry("litellm", build_litellm, capabilities={"continue_user_turn": False, "structured_output": True},
                       declarable=("structured_output",))
"""A hosted provider through litellm."""
SCRIPTED = BackendEntry("scripted", build_scripted, capabilities={"continue_user_turn": True, "structured_output": True},
                        requires={"outputs": "add outputs: [..] (tests only)"})
"""The test double replaying the spec's outputs."""
