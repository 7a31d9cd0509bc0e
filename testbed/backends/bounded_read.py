"""Reading a reply body up to a bound, so a long or endless body costs one attempt, never the machine's memory.

A model server or an HTTP agent decides how much it sends; the testbed decides how much it reads: the
agent spec's `max_reply_bytes` (testbed.limits.MAX_REPLY_BYTES by default). A body that declares more
is refused before a byte of it is read, and one that streams past the bound is cut off there and its
connection closed, so the rest is never read. Either is the attempt's error, and not retried: a server
that sends 50 MB once will send it again.
"""

from __future__ import annotations

import aiohttp

READ_CHUNK_BYTES = 64 * 1024
"""How much is taken from the connection at a time (aiohttp's own read buffer is this size)."""


class ReplyRefused(Exception):
    """A reply the testbed will not take, for a reason a retry would not change; `reason` is the one-line error."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ReplyTooLarge(ReplyRefused):
    """A reply body past the agent's `max_reply_bytes`, declared or streamed."""


def size_text(n: int) -> str:
    """A byte count as people read it: `8 MiB`, `1.5 MiB`, `512 KiB`, `900 bytes`."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


def too_large_reason(url: str, limit: int, detail: str) -> str:
    """The error for a body past the bound: the URL, the setting and its value, what was seen, and the fix."""
    return (f"reply from {url} exceeds max_reply_bytes ({size_text(limit)}): {detail}; "
            "raise max_reply_bytes in the agent spec if replies this long are meant")


async def read_bounded(response: aiohttp.ClientResponse, limit: int, url: str) -> bytes:
    """The body of `response`, at most `limit` bytes of it (decoded, so a compressed bomb is bounded too).

    Raises ReplyTooLarge, with the connection closed, when the body declares or reaches more.
    """
    declared = response.content_length
    if declared is not None and declared > limit:
        response.close()
        raise ReplyTooLarge(too_large_reason(url, limit, f"it declares {size_text(declared)} (Content-Length {declared}), none of it was read"))
    body = bytearray()
    while chunk := await response.content.read(READ_CHUNK_BYTES):
        body += chunk
        if len(body) > limit:
            response.close()
            raise ReplyTooLarge(too_large_reason(url, limit, "the body was cut off there, longer or endless"))
    return bytes(body)
