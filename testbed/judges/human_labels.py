"""Human labels from a JSONL file, stored beside the judges' so `agree --b human:<annotator>` can compare them.

A file is checked whole before anything is written: a bad line, an unknown label or a turn the run
does not have stops the import naming the line, and nothing of the file is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from testbed.judges.taxonomy import taxonomy
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.label_limits import checked_label
from testbed.specs.files import MAX_LABEL_BYTES, read_text
from testbed.store import Store
from testbed.store.labels import HUMAN, HUMAN_VERSION, JudgeIdentity, LabelRow, write_labels


class LabelFileError(ValueError):
    """A line of a label file that cannot be stored: `file:line: why`."""


@dataclass(frozen=True)
class ImportedLabels:
    """What `import_human_labels` stored: how many labels, on which run, under which identity."""

    run_id: str
    identity: JudgeIdentity
    count: int


def parse_human_labels(text: str, known: Iterable[tuple[str, int]], run_id: str, where: str | Path) -> list[LabelRow]:
    """The label rows of JSONL lines `{episode_id, turn_index, label}` (blank lines skipped) on the run's user turns
    `known`; LabelFileError naming `where` and the line at the first that is not one."""
    t, turns = taxonomy(), set(known)
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key = (str(row["episode_id"]), int(row["turn_index"]))
            label = t.check(row["label"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise LabelFileError(f"{where}:{number}: {exc}; each line needs episode_id, turn_index and a known label") from None
        if key not in turns:
            raise LabelFileError(f"{where}:{number}: run {run_id} has no user turn {key[0]}:{key[1]}")
        rows.append(label_row(*key, Verdict(label, t.is_followup(label), "human")))
    return rows


def import_human_labels(store: Store, run_id: str, path: Path | str, annotator: str) -> ImportedLabels:
    """Store the labels of the JSONL file at `path` as `human:<annotator>` on the run (`run_id` or a unique prefix).

    Raises StoreError for an unknown run, SpecError for a file that cannot be read, LabelFileError for a bad line,
    LabelTooLong (testbed.label_limits) for an annotator name longer than names may be, before anything is read.
    """
    checked_label(annotator, "--annotator")
    run = store.run(run_id)["run_id"]
    known = [tuple(k) for k in store.turn_keys(run)]
    text = read_text(Path(path), what="label file", max_bytes=MAX_LABEL_BYTES)
    rows = parse_human_labels(text, known, run, path)
    identity = JudgeIdentity(HUMAN, HUMAN_VERSION, annotator)
    write_labels(store, run, identity, rows)
    return ImportedLabels(run, identity, len(rows))
