"""A tiny ShareGPT-shaped file written by the tests (never real people's text), and the fixture that reads it as `sharegpt`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.datasets import loaders

QUESTIONS = ["How do I sort a list in Python?", "What is the capital of Peru?", "Can you explain recursion simply?",
             "Write a haiku about autumn rain.", "Why is the sky blue?", "How many legs does a spider have?"]
ANSWERS = ["Use sorted(items) or items.sort().", "Lima is the capital of Peru.", "A function that calls itself on a smaller input.",
           "Soft rain on red leaves, the path grows quiet.", "Air scatters blue light more than red.", "A spider has eight legs."]
REPLIES = ["what about sorting in reverse order?", "thanks! and its population?", "can you give an example in code?",
           "make it sadder please", "ok thanks", "do all spiders spin webs?"]


def conversation(k: int, *, follow_ups: int = 1) -> dict:
    """Synthetic conversation `k`: a question, an answer, the user's reply, and `follow_ups - 1` more exchanges."""
    turns = [{"from": "human", "value": QUESTIONS[k % len(QUESTIONS)]}, {"from": "gpt", "value": ANSWERS[k % len(ANSWERS)]},
             {"from": "human", "value": REPLIES[k % len(REPLIES)]}]
    for j in range(1, follow_ups):
        turns += [{"from": "gpt", "value": f"Here is more on that, part {j}."}, {"from": "human", "value": f"and part {j + 1}?"}]
    return {"id": f"conv{k}", "conversations": turns}


def write_chats(path: Path, records: list[dict], *, cut_off: bool = True) -> Path:
    """The records as one JSON array, cut off inside one more record when `cut_off` (as the shipped file is)."""
    text = "[\n" + ",\n".join(json.dumps(r) for r in records)
    text += ',\n{"id": "cut", "conversations": [{"from": "human", "value": "never fini' if cut_off else "\n]"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def chats_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Make `sharegpt` read a synthetic file; returns a function that writes its records (cut off at the end)."""
    path = tmp_path / "chats.json"
    real = loaders.data_file
    monkeypatch.setattr(loaders, "data_file", lambda name: path if name == "sharegpt" else real(name))
    loaders._cached_contexts.cache_clear()

    def write(records: list[dict], *, cut_off: bool = True) -> Path:
        loaders._cached_contexts.cache_clear()
        return write_chats(path, records, cut_off=cut_off)

    yield write
    loaders._cached_contexts.cache_clear()
