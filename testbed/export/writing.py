"""Write an export to disk: `<run>.<kind>.jsonl` and its data card `<run>.<kind>.card.md`, each atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

from testbed.export.card import card_text
from testbed.export.training import Export, ExportFilter
from testbed.provenance import package_versions


def write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file, so a failed write never leaves half a file under the final name."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_export(export: Export, chosen: ExportFilter, out: Path) -> tuple[Path, Path]:
    """The JSONL (loadable with `datasets.load_dataset("json", data_files=...)`) and its card, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    data = out / f"{export.run_id}.{export.kind}.jsonl"
    write_atomically(data, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in export.rows))
    card = out / f"{export.run_id}.{export.kind}.card.md"
    write_atomically(card, card_text(export, chosen, data, {"usersim-testbed": package_versions().get("usersim-testbed", "?")}))
    return data, card
