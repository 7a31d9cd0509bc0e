"""The bounded reader against a real server: a body within the bound whole, one past it refused at the bound."""

from __future__ import annotations

import time

import aiohttp
import pytest
from aiohttp import web

from http_agent_server import AgentServer, endless, huge
from testbed.backends.bounded_read import ReplyTooLarge, read_bounded, size_text

LIMIT = 256 * 1024


async def read(handler, limit: int = LIMIT) -> bytes:
    async with AgentServer([], routes={"/body": handler}) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.origin}/body") as response:
            return await read_bounded(response, limit, f"{server.origin}/body")


@pytest.mark.parametrize("declared", [True, False])
async def test_a_body_at_the_bound_is_read_whole(declared):
    body = await read(huge(LIMIT, declared=declared, chunk=10_000))
    assert len(body) == LIMIT and body.startswith(b'{"content": "') and body.endswith(b'"}')


@pytest.mark.parametrize("declared, detail", [(True, "it declares 1 MiB (Content-Length 1048576), none of it was read"),
                                               (False, "the body was cut off there, longer or endless")])
async def test_a_body_past_the_bound_is_refused_with_the_url_the_setting_and_the_fix(declared, detail):
    with pytest.raises(ReplyTooLarge) as caught:
        await read(huge(1024 * 1024, declared=declared))
    reason = caught.value.reason
    assert reason.startswith("reply from http://127.0.0.1:") and "/body exceeds max_reply_bytes (256 KiB): " in reason
    assert detail in reason and reason.endswith("raise max_reply_bytes in the agent spec if replies this long are meant")


async def test_an_endless_body_stops_at_the_bound():
    started = time.perf_counter()
    with pytest.raises(ReplyTooLarge, match="cut off there"):
        await read(endless(chunk=1000))
    assert time.perf_counter() - started < 3


@pytest.mark.parametrize("n, text", [(900, "900 bytes"), (512 * 1024, "512 KiB"), (8 * 1024**2, "8 MiB"),
                                     (1536 * 1024, "1.5 MiB"), (1024**3, "1 GiB")])
def test_sizes_read_as_people_write_them(n, text):
    assert size_text(n) == text


async def test_an_empty_body_is_empty():
    assert await read(lambda r: web.Response(status=204)) == b""
