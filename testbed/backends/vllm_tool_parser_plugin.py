"""The tolerant tool-call parser as a vLLM plugin: `--tool-parser-plugin THIS_FILE --tool-call-parser tolerant`.

Loaded by the vLLM server process only (vLLM imports it by path at start-up; nothing in the testbed imports it),
so vLLM is imported here and nowhere else in the package. The server's Python must be able to import `testbed`:
the managed server runs on the testbed's own interpreter; for a server you start yourself, install the testbed
into vLLM's environment (testbed.backends.vllm_server.tool_calling_flags prints the flags).

The parsing is testbed.backends.tool_call_text: hermes tags first, else fenced or bare JSON calls. It applies
only to requests that offer tools: a reply to a request without tools keeps hermes' reading, so a dialogue that
writes JSON on a server started with this parser gets its text back as text. Streaming is hermes' own (tagged
calls stream as calls; untagged JSON streams as text): the testbed never streams.
"""

from __future__ import annotations

from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.tool_parsers.abstract_tool_parser import ToolParserManager
from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser

from testbed.backends.tool_call_text import TOLERANT_PARSER, read_tool_calls


class TolerantToolParser(Hermes2ProToolParser):
    """hermes, plus the untagged JSON calls small models write (testbed.backends.tool_call_text).

    A subclass of vLLM's hermes parser so everything but the non-streaming reading is hermes': its request
    adjustment (special tokens kept, so `<tool_call>` survives detokenising) and its streaming."""

    def extract_tool_calls(self, model_output: str, request) -> ExtractedToolCallInformation:
        """The calls in a finished reply and the text beside them; the reply as text when it makes none."""
        if not getattr(request, "tools", None):
            return super().extract_tool_calls(model_output, request)
        read = read_tool_calls(model_output)
        if not read.calls:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        calls = [ToolCall(type="function", function=FunctionCall(name=c.name, arguments=c.arguments)) for c in read.calls]
        return ExtractedToolCallInformation(tools_called=True, tool_calls=calls, content=read.content)


ToolParserManager.register_module(TOLERANT_PARSER, module=TolerantToolParser)
