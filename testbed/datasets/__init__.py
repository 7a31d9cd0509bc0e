"""Benchmark items and task-accuracy scoring.

Each benchmark is a `DatasetEntry` declared beside its code and registered by name in `DATASETS`.
`load_items` turns the benchmark files shipped in registry packages into `DatasetItem`s with
stable ids; `score_answer` says whether an assistant answer is right (1.0), wrong (0.0) or cannot
be judged offline (`None`, never to be counted as wrong).
"""

from testbed.datasets.catalog import DATASETS, UnknownDataset, carries_canary, dataset_entry, licence_note
from testbed.datasets.entry import DatasetEntry, DatasetSource
from testbed.datasets.items import DatasetItem
from testbed.datasets.loaders import load_items
from testbed.datasets.scoring import score_answer

__all__ = [
    "DATASETS",
    "DatasetEntry",
    "DatasetItem",
    "DatasetSource",
    "UnknownDataset",
    "carries_canary",
    "dataset_entry",
    "licence_note",
    "load_items",
    "score_answer",
]
