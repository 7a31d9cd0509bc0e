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


def real_context_probe(folder: Path, store, *, user_modes: list[str], temperatures: list[float]):
    """A scripted probe run over 12 of the synthetic conversations (written first with `chats_file`), labelled by the
    local judge: the run summary. The user asks for an example, then about the second point, in turn."""
    import asyncio

    from helpers import REPO, write_yaml
    from testbed.backends.scripted import ScriptedBackend
    from testbed.judges.runner import judge_run
    from testbed.judges.specs import load_judge
    from testbed.running.runner import run_scenario
    from testbed.specs.loader import load_scenario

    (folder / "prompts").mkdir()
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-instructed.md").read_text())
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "scripted-model", "outputs": ["x"]})
    spec = load_scenario(write_yaml(folder / "real.yaml", {
        "kind": "probe", "name": "real", "dataset": "sharegpt", "items": {"limit": 12, "seed": 1}, "assistant": "scripted.yaml",
        "user": "scripted.yaml", "user_modes": user_modes, "user_prompt_file": "prompts/user.md", "temperatures": temperatures,
        "max_tokens": 16}))
    replies = iter(["Thanks! can you give an example?", "what about the second one?"] * 100)
    summary = asyncio.run(run_scenario(spec, store, backends={"assistant": ScriptedBackend(lambda r: "x"),
                                                              "user": ScriptedBackend(lambda r: next(replies))}, show_progress=False))
    asyncio.run(judge_run(store, summary.run_id, load_judge("local"), show_progress=False))
    return summary
