"""Benchmark items and task-accuracy scoring.

`load_items` turns the benchmark files shipped in registry packages into `DatasetItem`s with
stable ids; `score_answer` says whether an assistant answer is right (1.0), wrong (0.0) or cannot
be judged offline (`None`, never to be counted as wrong).
"""

from testbed.datasets.items import DatasetItem
from testbed.datasets.loaders import DATASETS, UnknownDataset, load_items
from testbed.datasets.scoring import score_answer

__all__ = ["DATASETS", "DatasetItem", "UnknownDataset", "load_items", "score_answer"]
