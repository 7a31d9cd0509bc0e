"""Scorer tests on synthetic items (and GSM8K/IFEval/IFBench, whose text may be shown)."""

from __future__ import annotations

import socket
from decimal import Decimal
from typing import Any

import nltk
import pytest

from testbed.datasets import DatasetItem, load_items, score_answer
from testbed.datasets import instruction_checks
from testbed.datasets.instruction_checks import NltkDownloadRefused, scorable_instruction
from testbed.datasets.scoring import extract_choice_letter, extract_final_number


def _item(dataset: str, **reference: Any) -> DatasetItem:
    messages = [{"role": "user", "content": "Q?"}]
    return DatasetItem(dataset, f"{dataset}-synthetic", messages, reference)


def _nltk_data_installed() -> bool:
    try:
        nltk.data.find("tokenizers/punkt_tab")
    except LookupError:
        return False
    return True


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Record and refuse every socket connection or DNS lookup made during the test."""
    attempts: list[tuple[Any, ...]] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


@pytest.mark.parametrize(
    ("answer", "expected", "score"),
    [
        ("The answer is 18.", "18", 1.0),
        ("#### 1,234", "1234", 1.0),
        ("She pays $1,234.00 in total.", "1234", 1.0),
        ("So 5 + 13 = 18", "18", 1.0),
        ("The answer is 18.0", "18", 1.0),
        ("The temperature ends at -5 degrees.", "-5", 1.0),
        ("10-3=7", "7", 1.0),
        ("Answer: 42\nCheck: 42 * 2 = 84", "42", 1.0),
        ("- 5 apples\n- 6 pears\nTotal: 11", "11", 1.0),
        ("The final answer is $\\boxed{18}$.", "18", 1.0),
        ("<think>maybe 17</think>The answer is 18", "18", 1.0),
        ("It costs 0.5 dollars", "0.5", 1.0),
        ("The answer is 17.", "18", 0.0),
        ("I am not sure.", "18", 0.0),
        ("", "18", 0.0),
        ("The answer is 18", "-18", 0.0),
    ],
)
def test_gsm8k_answers(answer: str, expected: str, score: float) -> None:
    assert score_answer(_item("gsm8k", answer=expected), answer) == score


def test_gsm8k_number_extraction_details() -> None:
    assert extract_final_number("no digits") is None
    assert extract_final_number("costs -$3.50 each") == Decimal("-3.50")
    assert extract_final_number("COVID-19") == Decimal("19")
    assert extract_final_number("The answer is\n\nwell, 7 then 9") == Decimal("9")
    assert extract_final_number("The answer is 5 + 13 = 18") == Decimal("18")
    assert extract_final_number("So the answer is 4 * 2 = 8. Next, 100 more") == Decimal("8")
    assert extract_final_number("The answer is 3.5 hours. Also 7") == Decimal("3.5")


def test_gsm8k_without_reference_is_unscorable() -> None:
    assert score_answer(_item("gsm8k"), "18") is None


def test_gsm8k_gold_answers_score_one() -> None:
    items = load_items("gsm8k", limit=50, seed=1)
    assert all(score_answer(i, f"#### {i.reference['answer']}") == 1.0 for i in items)


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("Answer: C", 1.0),
        ("The correct answer is (C).", 1.0),
        ("the answer is **C**", 1.0),
        ("C", 1.0),
        ("(C)", 1.0),
        ("C.", 1.0),
        ("(A) fails the test, but (C) passes.", 1.0),
        ("Between A and C, I would pick C", 1.0),
        ("I think the answer is B", 0.0),
        ("Answer: B. Hmm.", 0.0),
        ("answer is: D", 0.0),
        ("none of these look right", 0.0),
        ("", 0.0),
    ],
)
def test_gpqa_letters(answer: str, score: float) -> None:
    assert score_answer(_item("gpqa_diamond", letter="C"), answer) == score


def test_choice_letter_extraction_details() -> None:
    assert extract_choice_letter("a lowercase a is an article") is None
    assert extract_choice_letter("Answer: D\nBut (A) was tempting") == "D"
    assert score_answer(_item("gpqa_diamond"), "C") is None


def _ifeval(ids: list[str], kwargs: list[dict[str, Any]]) -> DatasetItem:
    return _item("ifeval", instruction_id_list=ids, kwargs=kwargs, prompt="Q?")


@pytest.mark.parametrize(
    ("instruction", "kwargs", "passing", "failing"),
    [
        ("punctuation:no_comma", {}, "Hello world and friends", "Hello, world"),
        (
            "detectable_format:number_bullet_lists",
            {"num_bullets": 2},
            "* first point\n* second point",
            "* only one point",
        ),
        (
            "change_case:english_lowercase",
            {},
            "this reply is written entirely in lowercase english words.",
            "This Reply Has Capital Letters In English.",
        ),
    ],
)
def test_ifeval_single_instruction(
    instruction: str, kwargs: dict[str, Any], passing: str, failing: str
) -> None:
    item = _ifeval([instruction], [kwargs])
    assert score_answer(item, passing) == 1.0
    assert score_answer(item, failing) == 0.0


def test_ifeval_needs_every_instruction_followed() -> None:
    item = _ifeval(["punctuation:no_comma", "change_case:english_lowercase"], [{}, {}])
    assert score_answer(item, "all lowercase and no commas in this english sentence.") == 1.0
    assert score_answer(item, "all lowercase, but with a comma in this english sentence.") == 0.0
    assert score_answer(item, "") == 0.0


def test_ifbench_ignores_none_kwargs() -> None:
    item = _item(
        "ifbench",
        instruction_id_list=["format:no_whitespace"],
        kwargs=[{"N": None, "keyword": None}],
        prompt="Q?",
    )
    assert score_answer(item, "nowhitespacehere") == 1.0
    assert score_answer(item, "some whitespace") == 0.0


def test_unknown_instruction_is_unscorable() -> None:
    assert score_answer(_ifeval(["made:up"], [{}]), "anything") is None
    assert not scorable_instruction("made:up")
    assert scorable_instruction("punctuation:no_comma")
    assert scorable_instruction("format:no_whitespace")


@pytest.mark.skipif(_nltk_data_installed(), reason="NLTK data present: the check can run")
def test_nltk_instruction_is_unscorable_offline(network_attempts: list[tuple[Any, ...]]) -> None:
    kwargs = {"num_sentences": 2, "relation": "at least"}
    item = _ifeval(["length_constraints:number_sentences"], [kwargs])
    assert not scorable_instruction("length_constraints:number_sentences")
    assert score_answer(item, "One sentence. Two sentences. Three.") is None
    assert score_answer(item, "") is None
    with pytest.raises(NltkDownloadRefused):
        nltk.download("punkt_tab")
    assert network_attempts == []


@pytest.mark.skipif(_nltk_data_installed(), reason="NLTK data present: the check can run")
def test_lookup_error_at_check_time_is_unscorable(
    monkeypatch: pytest.MonkeyPatch, network_attempts: list[tuple[Any, ...]]
) -> None:
    """The static list is a reading of the source; a checker missing from it must still give
    `None`. This one only tokenizes when the answer has at least `n` sentences."""
    monkeypatch.delitem(instruction_checks._NLTK_RESOURCES, "words:keywords_specific_position")
    item = _item(
        "ifbench",
        instruction_id_list=["words:keywords_specific_position"],
        kwargs=[{"keyword": "cat", "n": 2, "m": 1}],
        prompt="Q?",
    )
    assert score_answer(item, "One sentence only") == 0.0
    assert score_answer(item, "First one. Cat second.") is None
    assert network_attempts == []


@pytest.mark.skipif(_nltk_data_installed(), reason="NLTK data present: more items scorable")
def test_scorable_item_counts(network_attempts: list[tuple[Any, ...]]) -> None:
    response = "This is a dummy response. It has two sentences."
    counts = {
        name: sum(score_answer(i, response) is not None for i in load_items(name))
        for name in ("ifeval", "ifbench")
    }
    assert counts == {"ifeval": 477, "ifbench": 271}
    assert network_attempts == []


def test_healthbench_and_unknown_datasets_are_unscorable() -> None:
    assert score_answer(_item("healthbench"), "Please see a doctor.") is None
    assert score_answer(_item("somebench", answer="1"), "1") is None
