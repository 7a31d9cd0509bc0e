"""A benchmark item as every scenario sees it: stable id, prompt messages, reference."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DatasetItem:
    """One benchmark question.

    `item_id` is stable across machines and releases of the testbed (derived from the source's
    own key or from a hash of the question), so episode ids built on it make runs resumable.
    `reference` is what `score_answer` needs (the number, the letter, the instruction list).
    """

    dataset: str
    item_id: str
    messages: list[dict[str, str]]
    reference: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str:
        """The text of the last user message: the request the simulated user would repeat."""
        from testbed.transcript import is_user  # here, not at the top: `import testbed` loads this module with the registrations

        return next(m["content"] for m in reversed(self.messages) if is_user(m))


def stable_hash(text: str, length: int = 12) -> str:
    """First `length` hex digits of the SHA-1 of `text`: a content id independent of row order.

    A lone surrogate (valid in JSON, so in a dataset's file) is hashed by its code point rather than refused;
    every other text hashes exactly as its UTF-8 bytes."""
    return hashlib.sha1(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:length]


def user_turn(content: str) -> list[dict[str, str]]:
    """The messages of a one-question item: a single user message."""
    return [{"role": "user", "content": content}]
