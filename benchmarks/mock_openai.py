"""An OpenAI-compatible chat server with injected latency and replies of a set length (real HTTP).

For tests and benchmarks of the turn loops, where a model would only add noise: every reply takes
`latency_s` and has `reply_words` words. A request can ask for the end marker: when its system
message contains `SAY_MARKER_AT:K:MARKER` and it has at least K messages besides system ones, the
reply ends with MARKER (tests use it to make the simulated user stop).

    python benchmarks/mock_openai.py --latency-ms 100 --reply-words 20 --port 8011
    python benchmarks/mock_openai.py --port 0 --port-file /tmp/port     # a free port, written to the file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

from aiohttp import web

MARKER_RULE = re.compile(r"SAY_MARKER_AT:(\d+):(\S+)")


class MockOpenAI:
    """The server; `async with MockOpenAI(...) as mock:` listens on 127.0.0.1 and gives `mock.base_url`."""

    def __init__(self, *, latency_s: float = 0.0, reply_words: int = 8, model: str = "mock", port: int = 0):
        self.latency_s, self.reply_words, self.model, self.port = latency_s, reply_words, model, port
        self.requests: list[dict] = []
        self.replies: list[str] = []
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
        text = reply_text(messages, self.reply_words, len(self.requests))
        self.replies.append(text)
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        return web.json_response({
            "id": f"mock-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                      "total_tokens": prompt_tokens + len(text.split())},
        })


def reply_text(messages: list[dict], words: int, serial: int) -> str:
    """`words` words naming the request's serial number, then the end marker when the system message asks for it."""
    text = " ".join([f"reply{serial}"] + [f"w{i}" for i in range(1, words)])
    system = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    rule = MARKER_RULE.search(system)
    if rule and sum(m.get("role") != "system" for m in messages) >= int(rule.group(1)):
        text = f"{text} {rule.group(2)}"
    return text


async def serve(args: argparse.Namespace) -> None:
    """Run until killed, writing the port to `--port-file` once listening."""
    mock = MockOpenAI(latency_s=args.latency_ms / 1000, reply_words=args.reply_words, model=args.model, port=args.port)
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
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
