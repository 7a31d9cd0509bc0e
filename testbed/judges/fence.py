"""Fence untrusted text so nothing inside it can close the fence or pose as the judge's instructions.

Each fence carries an id derived from a hash of the fenced text itself. Text cannot contain the
closing line of its own fence: that would need the hash of a text to appear inside that text.
"""

from __future__ import annotations

import hashlib

OPEN = "<<<BEGIN {tag} id={fence_id}>>>"
CLOSE = "<<<END {tag} id={fence_id}>>>"


def fence_id(text: str, tag: str) -> str:
    """The fence id of a text: 16 hex digits of a SHA-256 over tag and text."""
    return hashlib.sha256(f"{tag}\x00{text}".encode()).hexdigest()[:16]


def fence(text: str, tag: str) -> str:
    """The text between an opening and a closing line that only this text's fence can produce."""
    fid = fence_id(text, tag)
    return f"{OPEN.format(tag=tag, fence_id=fid)}\n{text}\n{CLOSE.format(tag=tag, fence_id=fid)}"


def unfence(block: str, tag: str) -> str:
    """The text inside a block made by `fence`, checking both lines (used by tests and audits)."""
    lines = block.split("\n")
    first, last, body = lines[0], lines[-1], "\n".join(lines[1:-1])
    fid = fence_id(body, tag)
    if first != OPEN.format(tag=tag, fence_id=fid) or last != CLOSE.format(tag=tag, fence_id=fid):
        raise ValueError(f"not a {tag} fence made by this testbed")
    return body
