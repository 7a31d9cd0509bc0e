"""The hostile agent and the filler text of benchmarks/hostile_replies.py (issue 36's 50 MB, endless and 10 MB cases).

Nothing here imports the testbed, so the benchmark can load it beside whichever checkout it measures.
"""

from __future__ import annotations

SENTENCE = "The assistant keeps talking about the same step of the plan, at length and without end. "
"""88 bytes of plain ASCII prose, so a text's length in characters is its size in bytes."""
LINE_SENTENCES = 11
"""Sentences per line: lines of ~970 characters, as a long reply's paragraphs would be."""


def filler_text(size_bytes: int) -> str:
    """Prose of exactly `size_bytes` ASCII bytes, in paragraphs of ~1 KB: a reply too long to read, not a freak string."""
    line = SENTENCE * (LINE_SENTENCES - 1) + SENTENCE.rstrip() + "\n"
    text = line * (size_bytes // len(line) + 1)
    return text[:size_bytes]


class HugeFirstReply:
    """A `backend: python` agent whose first turn in each episode is `megabytes` MB of text and every later one short.

    One instance per episode (the testbed builds the class per episode), so every episode gets its own huge turn.
    """

    def __init__(self, megabytes: float = 10.0):
        self.size_bytes, self.turns = int(megabytes * 1_000_000), 0

    async def respond(self, turn) -> str:
        """The huge text on the first turn, then a one-line answer."""
        self.turns += 1
        return filler_text(self.size_bytes) if self.turns == 1 else f"Short answer number {self.turns}."
