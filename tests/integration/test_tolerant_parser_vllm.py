"""The tolerant tool-call parser inside real vLLM: loaded by path as vLLM loads a plugin, and passed by the managed
server so it starts with `--tool-call-parser tolerant` accepted and answers a request with tools.

Only what does not depend on the model's wording is asserted: the parser is registered and reads synthetic replies,
the server starts (vLLM refuses an unknown parser name at start-up) and a tools request returns 200.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import write_yaml
from testbed.backends.base import GenerateRequest
from testbed.backends.factory import BackendPool
from testbed.backends.vllm_server import TOLERANT_PLUGIN
from testbed.specs.loader import load_agent

pytestmark = pytest.mark.integration

TOOLS = [{"type": "function", "function": {"name": "get_user", "description": "Find a user by id",
                                           "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}}}}]
FENCED = 'Let me look.\n```json\n{"name": "get_user", "arguments": {"user_id": "u1"}}\n```'


class _Tokenizer:
    """What vLLM's hermes parser needs of a tokenizer here: to exist (its vocabulary is read only when streaming)."""

    def get_vocab(self) -> dict[str, int]:
        return {}


def test_the_plugin_loaded_by_path_registers_tolerant_and_reads_untagged_calls_only_when_tools_are_offered():
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers import ToolParserManager

    ToolParserManager.import_tool_parser(str(TOLERANT_PLUGIN))
    assert "tolerant" in ToolParserManager.list_registered()
    parser = ToolParserManager.get_tool_parser("tolerant")(_Tokenizer())
    with_tools = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=TOOLS)
    read = parser.extract_tool_calls(FENCED, with_tools)
    assert read.tools_called and read.content == "Let me look."
    assert [(c.function.name, c.function.arguments) for c in read.tool_calls] == [("get_user", '{"user_id": "u1"}')]
    assert not parser.extract_tool_calls("Hello! How can I help?", with_tools).tools_called
    without_tools = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    plain = parser.extract_tool_calls(FENCED, without_tools)
    assert not plain.tools_called and plain.content == FENCED, "a dialogue's JSON stays text"


async def test_a_managed_server_started_elsewhere_loads_the_plugin_and_answers_a_tools_request(tmp_path: Path, monkeypatch):
    spec_file = write_yaml(tmp_path / "specs" / "tolerant.yaml", {
        "name": "smollm2-tolerant", "backend": "vllm", "model": "embedded", "sampling": {"temperature": 0.0, "max_tokens": 24},
        "server": {"tool_call_parser": "tolerant", "startup_timeout_s": 900},
    })
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_agent(spec_file).spec
    async with BackendPool() as pool:
        backend = await pool.backend_for(spec)
        [server] = list(pool.servers)
        cmd = server.command()
        assert cmd[cmd.index("--tool-call-parser") + 1] == "tolerant"
        assert cmd[cmd.index("--tool-parser-plugin") + 1] == str(TOLERANT_PLUGIN)
        completion = await backend.generate(GenerateRequest(
            [{"role": "user", "content": "Find user u1."}], temperature=0.0, max_tokens=24, tools=TOOLS))
        assert completion.attempts == 1 and server.process is not None and server.process.poll() is None
    log = server.log_path.read_text(errors="replace")
    assert "Failed to load module" not in log and "invalid tool call parser" not in log
