"""Bounds on what an agent, a model server or a user may hand the testbed: crossing one costs one episode (or
one clear message), never the run, the machine's memory or a view that stalls.

One place for the numbers, so every reader (HTTP bodies, python agents, tool calls, labels) cuts at the same
bound and the docs can name it once.
"""

from __future__ import annotations

MAX_REPLY_BYTES = 8 * 1024 * 1024
"""Default bound on one reply body (a model server's, an HTTP agent's, a python agent's text), in bytes; an agent
spec's `max_reply_bytes` changes it. A chat reply is a few KB; 8 MB leaves room for long tool results."""

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in tool-call arguments; deeper is the tool's error, never a
RecursionError. Real tool schemas nest a handful of levels."""

MAX_TOOL_ARGUMENT_BYTES = 256 * 1024
"""Longest tool-call arguments text accepted, in bytes of UTF-8; longer is the tool's error."""

MAX_LABEL_CHARS = 200
"""Longest user-supplied name or label (a reviewer, an annotator, a run id): longer is refused with a message."""
