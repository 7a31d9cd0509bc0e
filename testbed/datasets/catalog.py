"""Every benchmark by name: the one registry of dataset entries, and the lookups the other layers make.

Each name points at the `DatasetEntry` at the end of the module that implements the dataset; the
names are registered in `testbed/entries.py`. Nothing is imported until an entry is first read, so
validating a spec's `dataset:` costs only the names. A new dataset is its module with its entry plus
one `register` line in entries.py.
"""

from __future__ import annotations

from testbed.datasets.entry import DatasetEntry
from testbed.registry import Registry


class UnknownDataset(ValueError):
    """Raised for a dataset name the testbed has no loader for.

    A `ValueError` so that spec validation can treat it like any other bad value; the message
    lists the known names so a typo in a scenario file is easy to fix.
    """


DATASETS: Registry[DatasetEntry] = Registry("dataset", DatasetEntry)
"""Known datasets by name, in a stable order (the order messages list them in)."""


def dataset_entry(name: str) -> DatasetEntry:
    """The entry registered under `name`; UnknownDataset listing the known names otherwise."""
    if name not in DATASETS:
        raise UnknownDataset(f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS.names())}")
    return DATASETS.entry(name)


def carries_canary(name: object) -> bool:
    """Whether a dataset's text carries a canary string; a name no entry declares (no benchmark) does not."""
    return name in DATASETS and DATASETS.entry(name).carries_canary


def licence_note(name: object, default: str) -> str:
    """The licence a data card states for a dataset, or `default` for text that comes from no registered benchmark."""
    return DATASETS.entry(name).licence_note if name in DATASETS else default
