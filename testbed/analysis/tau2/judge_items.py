"""The fault gold set's τ² user turns as annotation items for the follow-up judge (issue 40's later turns).

The gold episodes (`judges/faults-gold/episodes.jsonl`) hold every model-written message and no τ² text: tool
results and scripted history were left out when they were exported. A judge never sees tool traffic anyway
(`testbed.conversation_context` marks it), so the items are built straight from the file, without replaying the
task. Each generated user turn after the user's opening (the episode's request) becomes one item; a scripted
message whose text is τ²'s own is shown as `SCRIPTED_NOTE`.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.analysis.judge_quality.labelset import item_of
from testbed.analysis.tau2.annotation import SCRIPTED_NOTE
from testbed.scenarios.base import stable_hash
from testbed.store.reader import episode_turns
from testbed.transcript import TOOL_CALLS_COLUMN, is_tool, request_message

KIND = "tau2"


def _rows(record: dict) -> list[dict]:
    rows = []
    for m in record["messages"]:
        calls = json.dumps([{"id": i, "name": n, "arguments": a} for i, n, a in m["tool_calls"]]) if m.get("tool_calls") else None
        text = m["content"]
        if text is None:
            text = "" if is_tool(m) or calls else SCRIPTED_NOTE
        rows.append({"role": m["role"], "turn_index": m["turn"], "speaker": m["speaker"], "content": text, TOOL_CALLS_COLUMN: calls})
    return rows


def gold_turn_items(path: Path) -> list[dict]:
    """One annotation item per later user turn of every gold episode in `path`, in file and turn order."""
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        rows = _rows(record)
        turns = episode_turns(record["id"], rows)
        conditions = {"source_model": record["user_model"], "dataset": record["domain"], "kind": KIND,
                      "mode": record["user_mode"], "temperature": float(record["temperature"]), "perturbation": "none"}
        request = request_message(rows)
        later = [t for t in turns if request is None or t.turn_index != request["turn_index"]]
        for ordinal, turn in enumerate(later, start=1):
            items.append(item_of(turn, item_id=stable_hash(KIND, record["id"], turn.turn_index, length=12),
                                 conversation=f"faults-gold/{record['id']}", conditions=conditions, ordinal=ordinal))
    return items
