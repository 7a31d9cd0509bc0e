"""Labelled turns as the trainer and the scorer read them: JSONL rows, rebuilt where their text was detached, as judge inputs.

A row of a conversation opened by a real ShareGPT turn is committed detached (`detached_text`): its `source` names
the dataset, the item, the item selection that loaded it and a fingerprint, and the text is put back here from the
installed package. Every row becomes a `JudgeInput` with its conversation capped exactly as the store caps a judged
turn's (`testbed.conversation_context.capped`), so a model is trained on the view it judges with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from testbed.analysis.judge_quality.detached_text import attach_rows, sharegpt_sources
from testbed.conversation_context import capped, from_dicts
from testbed.judges.verdict import JudgeInput

HELD_OUT = "heldout"
"""The `split` of a row kept out of every choice until the final score (`labelset.split_of`)."""


def read_rows(paths: Sequence[Path]) -> list[dict]:
    """Every row of the JSONL files, in order, with detached text rebuilt from the installed packages."""
    rows = [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return attached(rows)


def attached(rows: list[dict]) -> list[dict]:
    """The rows with every detached text put back (`detached_text.attach_rows`), one package read per item selection."""
    selections: dict[str, set[str]] = {}
    for r in rows:
        if "source" in r:
            source = r["source"]
            if not isinstance(source, dict) or "item_id" not in source or "selection" not in source:
                raise ValueError(f"row {r.get('id')}: its `source` must name the item (`item_id`) and the item selection that "
                                 "loaded it (`selection`); write the row with scripts/labelset.py merge --detach SPEC")
            selections.setdefault(json.dumps(source["selection"], sort_keys=True), set()).add(source["item_id"])
    if not selections:
        return rows
    sources: dict[str, str] = {}
    for selection, ids in selections.items():
        sources |= sharegpt_sources(ids, json.loads(selection))
    return attach_rows(rows, sources)


def judge_input(row: dict) -> JudgeInput:
    """The judge's view of a labelled row: the request, the answer, the turn and the conversation between them, capped,
    and the row's scenario kind where it names one."""
    kind = row.get("kind")
    return JudgeInput(str(row["id"]), row["question"], row["assistant"], row["user_turn"], capped(from_dicts(row.get("context"))),
                      kind if isinstance(kind, str) else None)


def group_of(row: dict) -> str:
    """What cross-validation keeps together: the row's conversation where it names one, else its request (older files)."""
    return row.get("conversation") or row["question"]
