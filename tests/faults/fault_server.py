"""A fault-injecting OpenAI-compatible server: real HTTP/1.1 on loopback, the fault chosen per request.

It runs its own event loop in a thread, so the same server serves in-process backends and a
`testbed` command started as a subprocess. Written on raw asyncio streams rather than a web
framework so that it can also misbehave below HTTP: a garbage status line, a reset, a closed
connection, a hang.

A test sets `plan(request) -> Fault`; `Request` carries the request number, the decoded body,
the headers and how many times this exact body was seen (so a fault can be transient).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODEL = "fault-model"


@dataclass(frozen=True)
class Request:
    """One chat request as the server saw it."""

    number: int
    body: dict[str, Any]
    headers: dict[str, str]
    seen: int
    """How many times this exact body arrived, this one included (1 on the first attempt)."""

    @property
    def text(self) -> str:
        """Every message content of the request, joined: what a plan matches on."""
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))


@dataclass(frozen=True)
class Fault:
    """What the server does with one request: `kind` and its parameters (see FaultServer._respond)."""

    kind: str = "ok"
    text: str = "Why is that the answer?"
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def ok(text: str = "Why is that the answer?", **kw: Any) -> Fault:
    """A well-formed completion with this text."""
    return Fault("ok", text=text, **kw)


def reply_body(content: Any = "4", usage: Any = None, finish_reason: Any = "stop", **message: Any) -> dict[str, Any]:
    """A completion body; pass odd values to make a malformed one."""
    msg = {"role": "assistant", **message}
    if content is not ...:
        msg["content"] = content
    return {"id": "c1", "object": "chat.completion", "model": MODEL,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish_reason}],
            "usage": usage if usage is not None else {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


MALFORMED: dict[str, bytes] = {
    "null_content": json.dumps(reply_body(None)).encode(),
    "missing_content": json.dumps(reply_body(...)).encode(),
    "int_content": json.dumps(reply_body(42)).encode(),
    "list_content": json.dumps(reply_body([1, 2])).encode(),
    "str_tokens": json.dumps(reply_body("4", {"prompt_tokens": "many", "completion_tokens": 3})).encode(),
    "float_tokens": json.dumps(reply_body("4", {"prompt_tokens": 5, "completion_tokens": 2.5})).encode(),
    "no_choices": json.dumps({"object": "chat.completion", "choices": []}).encode(),
    "not_json": b"<html>gateway says hi</html>",
    "json_list": b"[1, 2, 3]",
    "non_utf8": b"\xff\xfe\x00garbage\x80\x81",
}
"""200 replies the testbed cannot read, by name."""

LOW_LEVEL = ("garbage_status", "reset", "close", "hang")
"""Faults below HTTP."""


class FaultServer:
    """Serves `/v1/models` and `/v1/chat/completions`, each chat request answered as `plan` says."""

    def __init__(self, plan: Callable[[Request], Fault] | None = None, *, models_fault: Fault | None = None,
                 model: str = MODEL):
        self.plan: Callable[[Request], Fault] = plan or (lambda r: ok())
        self.models_fault = models_fault
        self.model = model
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (…/v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FaultServer":
        """Start serving in the background thread."""
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> "FaultServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def chat_count(self) -> int:
        """Chat requests received so far."""
        with self._lock:
            return len(self.requests)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                if not await self._route(method, path, headers, raw, writer):
                    return
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, ValueError):
            pass
        finally:
            if not writer.is_closing():
                writer.close()

    async def _route(self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter) -> bool:
        if method == "GET" and path.endswith("/models"):
            fault = self.models_fault or Fault("json", body=json.dumps({"object": "list", "data": [{"id": self.model}]}).encode())
            return await self._respond(fault, writer, headers)
        body = json.loads(raw or b"{}")
        with self._lock:
            digest = hashlib.sha256(raw).hexdigest()
            self._seen[digest] += 1
            request = Request(len(self.requests), body, headers, self._seen[digest])
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._respond(self.plan(request), writer, headers)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _respond(self, fault: Fault, writer: asyncio.StreamWriter, headers: dict[str, str]) -> bool:
        """Answer one request; False when the connection is gone afterwards."""
        if fault.delay_s:
            await asyncio.sleep(fault.delay_s)
        kind = fault.kind
        if kind == "hang":
            await asyncio.sleep(3600)
        if kind == "close":
            writer.close()
            return False
        if kind == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if kind == "garbage_status":
            writer.write(b"HTTP/1.1 two hundred OK-ish\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()
            writer.close()
            return False
        status, extra = fault.status, dict(fault.headers)
        if kind == "ok":
            payload = json.dumps(reply_body(fault.text)).encode()
        elif kind in MALFORMED:
            payload = MALFORMED[kind]
        elif kind == "echo_auth":
            payload = json.dumps({"error": {"message": f"bad request; you sent Authorization: {headers.get('authorization', '')}"}}).encode()
        else:
            payload = fault.body
        reason = {200: "OK", 401: "Unauthorized", 429: "Too Many Requests", 500: "Internal Server Error"}.get(status, "Status")
        head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json", f"Content-Length: {len(payload)}"]
        head += [f"{k}: {v}" for k, v in extra.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()
        return True
