"""An OpenAI-compatible chat server with injected latency and replies of a set length (real HTTP).

For tests and benchmarks of the turn loops, where a model would only add noise: every reply takes
`latency_s` and has `reply_words` words. A request can ask for the end marker: when its system
message contains `SAY_MARKER_AT:K:MARKER` and it has at least K messages besides system ones, the
reply ends with MARKER (tests use it to make the simulated user stop).

Scripted tool calls, for tool-using assistants (τ² tasks, whose system prompt is τ²'s and so cannot
carry a directive), are a server option: `tool_script` is a list of steps, each a list of calls
`{"name": ..., "arguments": {...}}` (arguments given as a string are sent verbatim, so a script can
send arguments that are not JSON). A request that carries `tools` and whose last message is not a
`tool` result gets the calls of step k, where k is the number of assistant messages with tool calls
already in the request; a request answering a tool result, or one past the script's end, gets the
usual text reply. So in every conversation each user turn is answered by one step's calls, their
results by text, until the script runs out. The reply is an OpenAI tool-call message (`content` null,
`tool_calls` with ids unique on the server, arguments as JSON text, `finish_reason` "tool_calls").
Requests without tools, and every request when there is no script, are answered exactly as before.
A τ² user's system prompt comes from its scenario's `user_prompt_file`, so `SAY_MARKER_AT:K:###STOP###`
written there makes the simulated user stop.

    python benchmarks/mock_openai.py --latency-ms 100 --reply-words 20 --port 8011
    python benchmarks/mock_openai.py --port 0 --port-file /tmp/port     # a free port, written to the file
    python benchmarks/mock_openai.py --tool-script '[[{"name": "get_user_details", "arguments": {"user_id": "x"}}]]'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path
from typing import Any

from aiohttp import web

MARKER_RULE = re.compile(r"SAY_MARKER_AT:(\d+):(\S+)")
ToolScript = list[list[dict[str, Any]]]
"""Steps of tool calls: each step is the calls of one reply, each call `{"name": str, "arguments": dict | str}`."""


class MockOpenAI:
    """The server; `async with MockOpenAI(...) as mock:` listens on 127.0.0.1 and gives `mock.base_url`."""

    def __init__(self, *, latency_s: float = 0.0, reply_words: int = 8, model: str = "mock", port: int = 0,
                 tool_script: ToolScript | None = None):
        self.latency_s, self.reply_words, self.model, self.port = latency_s, reply_words, model, port
        self.tool_script = checked_script(tool_script) if tool_script is not None else None
        self.requests: list[dict] = []
        self.replies: list[str | None] = []
        """Every reply's text, in order; None for a reply that calls tools."""
        self.calls: list[dict] = []
        """Every tool call the server answered with, in order, as sent."""
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def app(self) -> web.Application:
        """The aiohttp application: GET /v1/models and POST /v1/chat/completions."""
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        return app

    async def start(self) -> None:
        """Listen on 127.0.0.1 (`port`, or a free one when 0), with a real server's accept backlog (uvicorn's 2048):
        aiohttp's default of 128 drops the SYNs of a burst of new connections, which then wait a second to retry."""
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=2048)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    async def close(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> "MockOpenAI":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in self.model.split(",")]})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        messages = body.get("messages") or []
        calls = scripted_calls(messages, self.tool_script, len(self.requests)) if self.tool_script and body.get("tools") else None
        if calls is None:
            text = reply_text(messages, self.reply_words, len(self.requests))
            message, finish, completion_tokens = {"role": "assistant", "content": text}, "stop", len(text.split())
        else:
            text = None
            self.calls.extend(calls)
            message, finish = {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
            completion_tokens = sum(1 + len(c["function"]["arguments"].split()) for c in calls)
        self.replies.append(text)
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        return web.json_response({
            "id": f"mock-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })


def reply_text(messages: list[dict], words: int, serial: int) -> str:
    """`words` words naming the request's serial number, then the end marker when the system message asks for it."""
    text = " ".join([f"reply{serial}"] + [f"w{i}" for i in range(1, words)])
    system = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    rule = MARKER_RULE.search(system)
    if rule and sum(m.get("role") != "system" for m in messages) >= int(rule.group(1)):
        text = f"{text} {rule.group(2)}"
    return text


def checked_script(script: Any) -> ToolScript:
    """The script as given, or ValueError saying which step or call is not of the documented shape."""
    if not isinstance(script, list):
        raise ValueError(f"a tool script is a list of steps, not {type(script).__name__}")
    for i, step in enumerate(script):
        if not isinstance(step, list) or not step:
            raise ValueError(f"tool script step {i} is not a non-empty list of calls")
        for j, call in enumerate(step):
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
                raise ValueError(f"tool script step {i}, call {j} has no name")
            if not isinstance(call.get("arguments", {}), (dict, str)):
                raise ValueError(f"tool script step {i}, call {j}: arguments are an object or a string")
    return script


def scripted_calls(messages: list[dict], script: ToolScript, serial: int) -> list[dict] | None:
    """The OpenAI tool calls of the script's next step for this request, or None when it gets a text reply
    (its last message is a tool result, or every step was made already in this conversation)."""
    if not messages or messages[-1].get("role") == "tool":
        return None
    made = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    if made >= len(script):
        return None
    calls = []
    for i, call in enumerate(script[made]):
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append({"id": f"call_{serial}_{i}", "type": "function", "function": {"name": call["name"], "arguments": text}})
    return calls


def read_script(value: str) -> ToolScript:
    """`--tool-script`: the JSON itself, or the path of a file holding it."""
    text = value if value.lstrip().startswith("[") else Path(value).read_text()
    return checked_script(json.loads(text))


async def serve(args: argparse.Namespace) -> None:
    """Run until killed, writing the port to `--port-file` once listening."""
    script = read_script(args.tool_script) if args.tool_script else None
    mock = MockOpenAI(latency_s=args.latency_ms / 1000, reply_words=args.reply_words, model=args.model, port=args.port,
                      tool_script=script)
    await mock.start()
    if args.port_file:
        Path(args.port_file).write_text(json.dumps({"port": mock.port}))
    print(f"listening on {mock.base_url}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--reply-words", type=int, default=8)
    parser.add_argument("--model", default="mock", help="the served model name; several, comma-separated, for several agents")
    parser.add_argument("--tool-script", help="scripted tool calls for requests with tools: the JSON, or a file holding it")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
