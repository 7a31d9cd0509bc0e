"""The data card written beside an export: where the rows came from, who labelled them, how many, under which licence.

The card is read in terminals and viewers, so the names in it (run, judge, models, filters) are
`neutralised`; the JSONL rows beside it keep the stored text exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.datasets.catalog import licence_note
from testbed.export.training import Export, ExportFilter
from testbed.terminal_text import neutralised

OWN = "Apache-2.0 (this testbed's own tasks and personas)"
"""The licence of rows whose text comes from no registered benchmark; a benchmark's comes from its dataset entry."""


def card_text(export: Export, chosen: ExportFilter, data_file: Path, software: dict[str, str]) -> str:
    """The data card as Markdown, with no control character in it."""
    fields = {
        "file": data_file.name, "format": f"{export.kind} JSONL (chat messages)", "source_run": export.run_id,
        "judge": str(export.judge), "positive_labels": list(chosen.positive),
        "failure_labels": sorted(chosen.failure_labels()) if export.kind == "dpo" else None,
        "filters": {"user_model": chosen.user_model, "where": dict(chosen.where)}, "counts": export.counts,
        "datasets": {d: licence_note(d, OWN) for d in export.datasets}, "software": software,
    }
    lines = [f"# Data card: {data_file.name}", "",
             f"{export.counts['rows']} {export.kind.upper()} rows for user-turn generation from run `{export.run_id}`, "
             f"labelled by `{export.judge}`. Every completion is a user turn the simulated user wrote, verbatim from the store; "
             "prompts are the conversation as the simulated user saw it, with true roles: no system prompts, none of the "
             "assistant's tool calls or tool results, and the user's own tool calls and results (dual-control tasks) in "
             "OpenAI chat form.", "",
             "Load with `datasets.load_dataset(\"json\", data_files=\"" + data_file.name + "\")`.", "",
             "The labels are a judge's, not people's: check the judge's agreement with human labels "
             "(`testbed agree`) before training on them.", "", "```json", json.dumps(fields, indent=2, ensure_ascii=False), "```", ""]
    return neutralised("\n".join(lines))
