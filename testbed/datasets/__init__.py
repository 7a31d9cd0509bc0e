"""Benchmark items and task-accuracy scoring.

Each benchmark is a `DatasetEntry` declared beside its code and registered by name in `DATASETS`
(testbed/entries.py). `load_items` turns the benchmark files shipped in registry packages into
`DatasetItem`s with stable ids; `score_answer` says whether an assistant answer is right (1.0), wrong
(0.0) or cannot be judged offline (`None`, never to be counted as wrong).

Names are imported on first use, so registering the datasets (which imports `catalog`) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testbed.datasets.catalog import DATASETS, UnknownDataset, carries_canary, dataset_entry, licence_note
    from testbed.datasets.entry import DatasetEntry, DatasetSource
    from testbed.datasets.items import DatasetItem
    from testbed.datasets.loaders import load_items
    from testbed.datasets.scoring import score_answer

_API = {
    "DATASETS": "testbed.datasets.catalog",
    "UnknownDataset": "testbed.datasets.catalog",
    "carries_canary": "testbed.datasets.catalog",
    "dataset_entry": "testbed.datasets.catalog",
    "licence_note": "testbed.datasets.catalog",
    "DatasetEntry": "testbed.datasets.entry",
    "DatasetSource": "testbed.datasets.entry",
    "DatasetItem": "testbed.datasets.items",
    "load_items": "testbed.datasets.loaders",
    "score_answer": "testbed.datasets.scoring",
}
"""Public name → the module that defines it, imported on first use (module `__getattr__`)."""

__all__ = ["DATASETS", "DatasetEntry", "DatasetItem", "DatasetSource", "UnknownDataset", "carries_canary", "dataset_entry",
           "licence_note", "load_items", "score_answer"]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, and keep it here for the next."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'testbed.datasets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
