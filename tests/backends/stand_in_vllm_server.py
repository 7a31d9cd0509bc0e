"""A stand-in for vLLM's API server in the server-lifecycle tests: the mock OpenAI server plus /health, with an
"engine core" child that, like one busy in a step or stuck, does not honour SIGTERM.

The API server itself dies at once on SIGTERM, as vLLM's does during start-up. Once listening it writes
{"server": pid, "engine": pid, "port": port} to the report file; a file next to it, REPORT.chat, appears
when the first chat request arrives, so a test can act mid-run.

    python stand_in_vllm_server.py --port PORT --model NAME --report FILE [--health 503]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

ENGINE = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"


class StandIn(MockOpenAI):
    """The mock server answering /health, marking its first chat request."""

    def __init__(self, report: Path, health: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report, self.health = report, health

    def app(self) -> web.Application:
        app = super().app()
        app.router.add_get("/health", lambda _: web.Response(status=self.health))
        return app

    async def _chat(self, request: web.Request) -> web.Response:
        Path(f"{self.report}.chat").touch()
        return await super()._chat(request)


async def serve(args: argparse.Namespace) -> None:
    engine = subprocess.Popen([sys.executable, "-c", ENGINE])
    server = StandIn(Path(args.report), args.health, latency_s=0.2, model=args.model, port=args.port)
    await server.start()
    Path(args.report).write_text(json.dumps({"server": os.getpid(), "engine": engine.pid, "port": server.port}))
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--health", type=int, default=200, help="the status /health answers (503: never ready)")
    asyncio.run(serve(parser.parse_args()))
