"""The tolerant parser reaches vLLM: the flags a managed server gets for each spec shape, and what a server that
drops or refuses tool calls is told (against real HTTP servers on 127.0.0.1)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

import testbed
from helpers import REPO, write_yaml
from testbed.backends import vllm_server
from testbed.backends.base import BackendUnavailable, GenerateRequest
from testbed.backends.factory import BackendPool
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.specs.agent import AgentSpec
from testbed.specs.errors import SpecError
from testbed.specs.loader import experiment_of, load_agent

PACKAGED_PLUGIN = Path(testbed.__file__).resolve().parent / "backends" / "vllm_tool_parser_plugin.py"
TOOLS = [{"type": "function", "function": {"name": "get_user", "parameters": {"type": "object", "properties": {}}}}]
MESSAGES = [{"role": "user", "content": "find me"}]


@pytest.fixture(autouse=True)
def cpu_build(monkeypatch):
    monkeypatch.setattr(vllm_server, "vllm_flavour", lambda: "cpu")


def flags_of(spec: AgentSpec) -> dict[str, str | None]:
    """The tool-calling flags of the agent's managed server command, flag → value (None for a switch)."""
    cmd = BackendPool._server(spec, "/models/m", 0).command()
    found: dict[str, str | None] = {}
    for flag in ("--tool-call-parser", "--tool-parser-plugin"):
        if flag in cmd:
            assert cmd.count(flag) == 1, f"{flag} given once"
            found[flag] = cmd[cmd.index(flag) + 1]
    if "--enable-auto-tool-choice" in cmd:
        found["--enable-auto-tool-choice"] = None
    return found


def agent_file(folder: Path, **server) -> Path:
    return write_yaml(folder / "agent.yaml", {"name": "a", "backend": "vllm", "model": "/models/m", "server": server})


def test_the_tolerant_parser_brings_the_packaged_plugin_by_absolute_path(tmp_path):
    spec = load_agent(agent_file(tmp_path, tool_call_parser="tolerant")).spec
    assert flags_of(spec) == {"--enable-auto-tool-choice": None, "--tool-call-parser": "tolerant",
                              "--tool-parser-plugin": str(PACKAGED_PLUGIN)}
    assert PACKAGED_PLUGIN.is_file() and PACKAGED_PLUGIN.is_absolute()


def test_a_plugin_of_your_own_is_read_against_the_spec_folder_not_the_working_directory(tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    (specs / "plugins").mkdir(parents=True)
    (specs / "plugins" / "mine.py").write_text("# registers `mine`\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_agent(agent_file(specs, tool_call_parser="mine", tool_parser_plugin="plugins/mine.py")).spec
    assert flags_of(spec) == {"--enable-auto-tool-choice": None, "--tool-call-parser": "mine",
                              "--tool-parser-plugin": str((specs / "plugins" / "mine.py").resolve())}


def test_the_plugin_location_is_left_out_of_the_run_id_and_the_parser_name_kept_in(tmp_path):
    identities = []
    for copy in ("one", "two"):
        (tmp_path / copy).mkdir()
        (tmp_path / copy / "mine.py").write_text("# registers `mine`\n")
        identities.append(load_agent(agent_file(tmp_path / copy, tool_call_parser="mine", tool_parser_plugin="mine.py")).identity())
    assert identities[0] == identities[1]
    assert identities[0]["server"]["tool_call_parser"] == "mine"
    stored = load_agent(tmp_path / "one" / "agent.yaml").as_dict()
    assert stored["spec"]["server"]["tool_parser_plugin"] == str((tmp_path / "one" / "mine.py").resolve()), "the store says which file"
    assert "tool_parser_plugin" not in experiment_of(stored)["spec"]["server"]


@pytest.mark.parametrize("server, field, says", [
    ({"tool_call_parser": "mine", "tool_parser_plugin": "missing.py"}, "server.tool_parser_plugin", "is not a file"),
    ({"tool_parser_plugin": "mine.py"}, "server.tool_parser_plugin", "no parser is named"),
    ({"tool_call_parser": "tolerant", "extra_args": ["--tool-parser-plugin", "x.py"]}, "server.extra_args", "server.tool_parser_plugin"),
])
def test_a_plugin_given_wrong_is_refused_naming_the_field(tmp_path, server, field, says):
    (tmp_path / "mine.py").write_text("")
    with pytest.raises(SpecError) as info:
        load_agent(agent_file(tmp_path, **server))
    assert info.value.field == field and says in str(info.value)


def test_a_relative_plugin_in_a_spec_built_in_code_is_refused_before_any_server_starts():
    spec = AgentSpec(name="a", backend="vllm", model="/models/m", server={"tool_call_parser": "mine", "tool_parser_plugin": "mine.py"})
    with pytest.raises(BackendUnavailable, match="server.tool_parser_plugin 'mine.py' is relative.*absolute path"):
        BackendPool._server(spec, "/models/m", 0)


@pytest.mark.parametrize("model, parser, expected", [
    ("embedded", None, "tolerant"),
    ("qwen2.5-coder-0.5b-instruct", None, "tolerant"),
    ("qwen2.5-coder-1.5b-instruct", "hermes", "hermes"),
    ("/models/any", None, None),
])
def test_a_catalogue_model_brings_its_own_parser_unless_the_spec_names_one(model, parser, expected):
    server = {"tool_call_parser": parser} if parser else {}
    flags = flags_of(AgentSpec(name="a", backend="vllm", model=model, server=server))
    assert flags.get("--tool-call-parser") == expected
    assert flags.get("--tool-parser-plugin") == (str(PACKAGED_PLUGIN) if expected == "tolerant" else None)


@pytest.mark.parametrize("name", ["qwen2.5-coder-0.5b.yaml", "qwen2.5-coder-1.5b.yaml", "smollm2-tools.yaml"])
def test_the_shipped_tool_calling_agents_use_the_tolerant_parser(name):
    spec = load_agent(REPO / "agents" / name).spec
    assert spec.server.tool_call_parser == "tolerant"
    assert flags_of(spec)["--tool-parser-plugin"] == str(PACKAGED_PLUGIN)


class ToolServer:
    """A chat-completions server on 127.0.0.1 answering every request with one scripted body."""

    def __init__(self) -> None:
        self.status, self.body = 200, {}
        self.server: TestServer | None = None

    def reply_text(self, text: str, tool_calls: list | None = None) -> None:
        message = {"role": "assistant", "content": text, **({"tool_calls": tool_calls} if tool_calls else {})}
        self.status, self.body = 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                       "usage": {"prompt_tokens": 5, "completion_tokens": 5}}

    async def chat(self, request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(self.body, status=self.status)

    @property
    def base_url(self) -> str:
        return str(self.server.make_url("/v1"))


@pytest.fixture
async def tool_server():
    fake = ToolServer()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.chat)
    fake.server = TestServer(app, host="127.0.0.1")
    await fake.server.start_server()
    yield fake
    await fake.server.close()


def told(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "testbed.tool_calls"]


async def test_a_server_that_refuses_tools_is_told_the_flags_with_the_plugins_absolute_path(tool_server):
    tool_server.status, tool_server.body = 400, {"object": "error", "message": '"auto" tool choice requires '
                                                 "--enable-auto-tool-choice and --tool-call-parser to be set"}
    backend = OpenAICompatibleBackend(base_url=tool_server.base_url, model="m", max_retries=0)
    with pytest.raises(BackendUnavailable) as info:
        await backend.generate(GenerateRequest(MESSAGES, tools=TOOLS))
    await backend.close()
    assert (f"--enable-auto-tool-choice --tool-call-parser tolerant --tool-parser-plugin {PACKAGED_PLUGIN}" in info.value.reason
            and "server.tool_call_parser: tolerant" in info.value.reason)


async def test_untagged_calls_the_server_left_as_text_are_reported_once_with_the_flags(tool_server, caplog):
    caplog.set_level(logging.WARNING, logger="testbed.tool_calls")
    backend = OpenAICompatibleBackend(base_url=tool_server.base_url, model="m", max_retries=0)
    tool_server.reply_text("Hello, how can I help?")
    await backend.generate(GenerateRequest(MESSAGES, tools=TOOLS))
    tool_server.reply_text('```json\n{"name": "get_user", "arguments": {}}\n```')
    await backend.generate(GenerateRequest(MESSAGES))
    assert told(caplog) == [], "plain text, or JSON where no tools were offered, is no dropped call"
    tool_server.reply_text("", [{"id": "c1", "type": "function", "function": {"name": "get_user", "arguments": "{}"}}])
    assert (await backend.generate(GenerateRequest(MESSAGES, tools=TOOLS))).tool_calls
    assert told(caplog) == [], "a parsed call is read"
    tool_server.reply_text('```json\n{"name": "get_user", "arguments": {}}\n```')
    completion = await backend.generate(GenerateRequest(MESSAGES, tools=TOOLS))
    await backend.generate(GenerateRequest(MESSAGES, tools=TOOLS))
    await backend.close()
    assert completion.tool_calls == () and "get_user" in completion.text, "the reply itself is left as the server sent it"
    [message] = told(caplog)
    assert tool_server.base_url in message and "untagged JSON" in message
    assert f"--enable-auto-tool-choice --tool-call-parser tolerant --tool-parser-plugin {PACKAGED_PLUGIN}" in message


async def test_a_managed_server_dropping_untagged_calls_is_told_the_spec_field(tool_server, caplog):
    caplog.set_level(logging.WARNING, logger="testbed.tool_calls")
    backend = OpenAICompatibleBackend(base_url=tool_server.base_url, model="m", max_retries=0, diagnose=lambda: None)
    tool_server.reply_text('[{"name": "get_user", "parameters": {}}]')
    await backend.generate(GenerateRequest(MESSAGES, tools=TOOLS))
    await backend.close()
    [message] = told(caplog)
    assert "set server.tool_call_parser: tolerant in the agent spec" in message and "--tool-parser-plugin" not in message
