"""Agent specs: which backend and model play a role, with what sampling and system prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from testbed.limits import MAX_REPLY_BYTES
from testbed.specs.registries import BACKENDS, registered

BackendName = registered(BACKENDS)
"""A backend name: one of those registered in `testbed.specs.registries.BACKENDS`."""


class Strict(BaseModel):
    """Base of every spec model: unknown fields are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    LEFT_OUT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ()
    """Fields added after runs were made: dumped only when they differ from their default, so the spec hashes
    (and run ids) of runs made before them stay."""

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        out = handler(self)
        fields = type(self).model_fields
        for name in self.LEFT_OUT_AT_DEFAULT:
            if isinstance(out, dict) and getattr(self, name) == fields[name].get_default(call_default_factory=True):
                out.pop(name, None)
        return out


class SamplingSpec(Strict):
    """Sampling parameters of an agent's generations."""

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(256, ge=1, le=32768)
    seed: int | None = None


class ServerSpec(Strict):
    """How the testbed starts a managed vLLM server (ignored when `base_url` points at a running one).

    The scale options map onto `vllm serve` flags and are passed only when they differ from vLLM's
    defaults, so a CPU run's command line is the same as without them.
    """

    LEFT_OUT_AT_DEFAULT = ("replicas", "tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization", "tool_call_parser",
                           "tool_parser_plugin")

    max_model_len: int = Field(2048, ge=128)
    """Longest prompt plus completion, in tokens (`--max-model-len`); bounds the KV cache each sequence reserves."""
    dtype: str | None = None
    """Weights and activations dtype (`--dtype`): one of auto, half, float16, bfloat16, float, float32.
    Unset means float32 on the CPU build (its only reliable choice) and auto on GPUs."""
    port: int | None = Field(None, ge=1, le=65535)
    """Port of the server on 127.0.0.1; unset picks a free one, which is what several replicas need."""
    extra_args: list[str] = Field(default_factory=list)
    """Further `vllm serve` flags, appended as given (e.g. `--enable-prefix-caching`, `--pipeline-parallel-size 2`).
    A flag that a field of this spec sets is refused, so one setting never has two sources."""
    startup_timeout_s: float = Field(600.0, gt=0)
    """Seconds to wait for the server's /health before giving up with its log; large models load slowly."""
    replicas: int = Field(1, ge=1, le=64)
    """How many copies of the server the testbed starts, each on its own port (on a GPU machine, one per GPU);
    requests go to the one with the fewest in flight, and one that stops answering is taken out."""
    tensor_parallel_size: int = 1
    """GPUs one copy of the model is split across (`--tensor-parallel-size`): for a model too large for one
    GPU, or to cut per-token latency. 1 (vLLM's default) emits no flag."""
    data_parallel_size: int = 1
    """Engine copies inside one vLLM server (`--data-parallel-size`), balanced by vLLM behind one port.
    Each copy takes `tensor_parallel_size` GPUs. 1 (vLLM's default) emits no flag."""
    tool_call_parser: str | None = None
    """Lets the model call tools (`--enable-auto-tool-choice --tool-call-parser NAME`), which τ² tasks need. `tolerant`
    is the testbed's own (testbed.backends.tool_call_text, its plugin file passed for you): hermes' `<tool_call>` tags,
    and the fenced or bare JSON calls small models write instead; any other name is one of vLLM's parsers (`hermes`
    for models that always tag) or one your `tool_parser_plugin` registers. Unset: a catalogue model's own parser
    (testbed.backends.catalogue), else no tool calling (the server answers tool requests with an error)."""
    tool_parser_plugin: Path | None = None
    """Your own vLLM tool-parser plugin file (`--tool-parser-plugin`), registering the parser `tool_call_parser` names;
    a relative path is read against this spec file's folder (vLLM itself would read it against its working directory).
    Where the file lives is left out of the run id, as a port is; the parser's name stays in it."""
    gpu_memory_utilization: float | None = None
    """Share of each GPU's memory vLLM may take for weights and KV cache (`--gpu-memory-utilization`), in (0, 1].
    Lower it to share a GPU with another process; unset keeps vLLM's default."""

    @field_validator("tensor_parallel_size", "data_parallel_size")
    @classmethod
    def _parallel(cls, value: int, info) -> int:
        if value < 1:
            raise ValueError(f"{value} is not a number of GPUs | fix: give a whole number of at least 1 (1 = no {info.field_name.split('_')[0]} parallelism)")
        return value

    @field_validator("gpu_memory_utilization")
    @classmethod
    def _memory_share(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value <= 1:
            raise ValueError(f"{value} is not a share of GPU memory | fix: give a fraction above 0 and at most 1, e.g. 0.9, or drop it for vLLM's default")
        return value

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str | None) -> str | None:
        accepted = ("auto", "half", "float16", "bfloat16", "float", "float32")
        if value is not None and value not in accepted:
            raise ValueError(f"{value!r} is not a dtype vLLM accepts | fix: use one of {', '.join(accepted)}, or drop dtype (float32 on CPU, auto on GPU)")
        return value

    @field_validator("extra_args")
    @classmethod
    def _no_duplicate_flags(cls, value: list[str]) -> list[str]:
        owners = {
            "--tensor-parallel-size": "server.tensor_parallel_size", "-tp": "server.tensor_parallel_size",
            "--data-parallel-size": "server.data_parallel_size", "-dp": "server.data_parallel_size",
            "--gpu-memory-utilization": "server.gpu_memory_utilization",
            "--device-memory-utilization": "server.gpu_memory_utilization",
            "--max-model-len": "server.max_model_len", "--dtype": "server.dtype", "--port": "server.port",
            "--tool-call-parser": "server.tool_call_parser", "--enable-auto-tool-choice": "server.tool_call_parser",
            "--tool-parser-plugin": "server.tool_parser_plugin",
        }
        for arg in value:
            flag = arg.split("=", 1)[0]
            if flag.startswith("--"):
                flag = "--" + flag[2:].replace("_", "-")
            if flag in owners:
                raise ValueError(f"{arg!r} duplicates the field {owners[flag]} | fix: drop it from extra_args and set {owners[flag]} instead")
            if flag in ("--model", "--served-model-name"):
                raise ValueError(f"{arg!r} names the model, which the testbed passes itself | fix: drop it from extra_args and set the agent's `model`")
            if flag == "--host":
                raise ValueError(f"{arg!r}: a managed server listens on 127.0.0.1 only | fix: drop it; to serve on another address, start vLLM yourself and set base_url")
        return value

    @model_validator(mode="after")
    def _plugin_names_a_parser(self) -> "ServerSpec":
        if self.tool_parser_plugin is not None and self.tool_call_parser is None:
            raise ValueError("@tool_parser_plugin a plugin only registers parsers, and no parser is named | fix: set "
                             "server.tool_call_parser to the name your plugin registers")
        return self

    @property
    def gpus(self) -> int:
        """GPUs one managed server uses (tensor × data parallel): how many devices the replica code gives each copy."""
        return self.tensor_parallel_size * self.data_parallel_size


class CapabilitiesSpec(Strict):
    """Declared capabilities of a generic OpenAI-compatible server (vLLM's are known)."""

    continue_user_turn: bool = False
    structured_output: bool = False


class AgentSpec(Strict):
    """One agent: a model behind a backend, bound to a role by a scenario.

    `backend: vllm` with no `base_url` means the testbed starts (and stops) the vLLM server itself;
    `model: embedded` is the packaged SmolLM2-135M-Instruct. With `base_url` it reuses a running
    server. `backend: openai` is any OpenAI-compatible server, whose key is read from the
    environment variable named by `api_key_env`. `backend: litellm` reaches any provider litellm
    knows (`model: openai/gpt-4o-mini`, `anthropic/...`), with `base_url` optional. `backend: python`
    (`callable`, `options`) and `backend: http-agent` (`url`) put your own agent in the assistant's seat
    (testbed.backends.agent_protocol); `model` may then be left out (it defaults to `name`).
    """

    LEFT_OUT_AT_DEFAULT = ("base_urls", "callable", "options", "url", "max_reply_bytes")

    name: str = Field(min_length=1)
    backend: BackendName
    model: str = Field(min_length=1)
    base_url: str | None = None
    base_urls: list[str] | None = None
    """Several running servers of the same model (replicas): requests go to the one with the fewest in
    flight, and a replica that stops answering is taken out and its requests retried on the others."""
    api_key_env: str | None = None
    system_prompt_file: Path | None = None
    sampling: SamplingSpec = SamplingSpec()
    concurrency: int = Field(16, ge=1, le=4096)
    timeout_s: float = Field(300.0, gt=0, le=3600)
    """Seconds one request may take. A timeout is retried once; the server's health is checked at
    the first one, so a hung server stops the run within about this long plus five seconds."""
    max_retries: int = Field(4, ge=0, le=20)
    """Retries of a transient fault (5xx, 429, reset, unreadable reply), with capped backoff and `Retry-After` honoured."""
    max_reply_bytes: int = Field(MAX_REPLY_BYTES, ge=1024, le=1024**3)
    """Largest reply body read from this agent or its server, in bytes; a longer or endless one is cut off there and is
    that attempt's error (testbed.limits)."""
    server: ServerSpec = ServerSpec()
    capabilities: CapabilitiesSpec | None = None
    outputs: list[str] | None = None
    callable: str | None = None
    """`backend: python`: the agent as `package.module:name`, an async function or a class with an async
    `respond` (testbed.backends.agent_protocol); one instance per episode."""
    options: dict[str, Any] | None = None
    """`backend: python`: keyword arguments the agent class is built with (its model, its URL)."""
    url: str | None = None
    """`backend: http-agent`: the URL each turn is POSTed to (an OpenAI chat-completions endpoint, or any
    server keeping the JSON contract of testbed.backends.http_agent)."""

    @model_validator(mode="before")
    @classmethod
    def _default_model(cls, data: Any) -> Any:
        if isinstance(data, dict) and "model" not in data and data.get("backend") in BACKENDS.names():
            if not BACKENDS.entry(data["backend"]).needs_model and isinstance(data.get("name"), str):
                return {**data, "model": data["name"]}
        return data

    @field_validator("callable")
    @classmethod
    def _callable(cls, value: str | None) -> str | None:
        if value is None:
            return value
        module, _, attr = value.partition(":")
        if not attr or not all(p.isidentifier() for p in [*module.split("."), *attr.split(".")]):
            raise ValueError(f"{value!r} is not `module:name` | fix: write it like my_package.my_agent:MyAgent")
        return value

    @field_validator("base_url", "url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL | fix: write it like http://127.0.0.1:8000/v1")
        return value

    @field_validator("base_urls")
    @classmethod
    def _urls(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("is empty | fix: list the replicas' URLs, or drop base_urls")
        for url in value:
            cls._url(url)
        seen = [u.rstrip("/") for u in value]
        if len(set(seen)) != len(seen):
            raise ValueError("names the same URL twice | fix: list each replica once")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and (not value.replace("_", "").isalnum() or value.startswith("sk-")):
            raise ValueError(
                "looks like a key, not the name of an environment variable | fix: export the key and put the variable's name here"
            )
        return value

    @model_validator(mode="after")
    def _backend_fields(self) -> "AgentSpec":
        if self.base_url is not None and self.base_urls is not None:
            raise ValueError("@base_urls give either base_url or base_urls, not both | fix: move base_url into the base_urls list")
        if self.base_urls is not None and not BACKENDS.entry(self.backend).replicas:
            raise ValueError(f"@base_urls backend `{self.backend}` cannot spread requests over replicas | fix: use backend vllm or openai")
        if self.server.replicas > 1 and not BACKENDS.entry(self.backend).managed:
            raise ValueError(f"@server.replicas backend `{self.backend}` starts no server | fix: use backend vllm, or list running replicas in base_urls")
        for field in ("callable", "options", "url"):
            if getattr(self, field) is not None and field not in BACKENDS.entry(self.backend).own_fields:
                owner = next((n for n in BACKENDS.names() if field in BACKENDS.entry(n).own_fields), "another backend")
                raise ValueError(f"@{field} backend `{self.backend}` does not read {field} | fix: drop it, or use backend {owner}")
        for field, fix in BACKENDS.entry(self.backend).requires.items():
            if getattr(self, field) is None and not (field == "base_url" and self.base_urls):
                raise ValueError(f"@{field} backend `{self.backend}` needs {field} | fix: {fix}")
        return self

    def with_files_under(self, folder: Path) -> "AgentSpec":
        """This spec with the files its server reads made absolute against `folder` (its spec file's), so a managed
        server started from any working directory loads the file the spec names."""
        plugin = self.server.tool_parser_plugin
        if plugin is None or plugin.is_absolute():
            return self
        server = self.server.model_copy(update={"tool_parser_plugin": (folder / plugin).resolve()})
        return self.model_copy(update={"server": server})

    @property
    def managed(self) -> bool:
        """True when the testbed must start the server for this agent: a managed backend with no `base_url`."""
        return BACKENDS.entry(self.backend).managed and self.base_url is None and self.base_urls is None

    @property
    def urls(self) -> list[str]:
        """The running servers the agent names: its `base_urls`, or its one `base_url` (none when managed)."""
        return list(self.base_urls or ([self.base_url] if self.base_url else []))
