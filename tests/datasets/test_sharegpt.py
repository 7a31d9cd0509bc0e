"""The sharegpt dataset on synthetic files: streamed records, the cut-off record skipped, contexts, selection, stable ids."""

from __future__ import annotations

import pytest

from synthetic_chats import ANSWERS, QUESTIONS, REPLIES, chats_file, conversation  # noqa: F401
from testbed.datasets import load_items
from testbed.datasets import sharegpt
from testbed.datasets.contexts import HUMAN_TURN, REAL_ANSWER, ContextSelection
from testbed.datasets.language import is_english


def test_records_stream_in_chunks_and_skip_the_cut_off_record(chats_file, monkeypatch):
    path = chats_file([conversation(k) for k in range(30)])
    monkeypatch.setattr(sharegpt, "CHUNK", 64)
    assert [r["id"] for r in sharegpt.records(path)] == [f"conv{k}" for k in range(30)]
    path = chats_file([conversation(k) for k in range(3)], cut_off=False)
    assert [r["id"] for r in sharegpt.records(path)] == ["conv0", "conv1", "conv2"]


def test_a_context_is_the_conversation_up_to_an_answer_and_its_reference_the_real_next_turn(chats_file):
    chats_file([conversation(0)])
    [item] = load_items("sharegpt")
    assert item.messages == [{"role": "user", "content": QUESTIONS[0]}]
    assert item.reference[REAL_ANSWER] == ANSWERS[0] and item.reference[HUMAN_TURN] == REPLIES[0]
    assert item.item_id.startswith("sharegpt-conv0.") and item.item_id.endswith("-1")


def test_depth_gives_one_context_per_exchange_up_to_k(chats_file):
    chats_file([conversation(0, follow_ups=3)])
    assert len(load_items("sharegpt")) == 1
    deep = load_items("sharegpt", contexts=ContextSelection(depth=5))
    assert [i.reference["depth"] for i in deep] == [1, 2, 3]
    assert [m["role"] for m in deep[2].messages] == ["user", "assistant", "user", "assistant", "user"]
    assert deep[2].reference[HUMAN_TURN] == "and part 3?"


def test_odd_records_are_mended_or_skipped(chats_file):
    leading = {"id": "lead", "conversations": [{"from": "gpt", "value": "Hello!"}, *conversation(1)["conversations"]]}
    doubled = {"id": "dbl", "conversations": [{"from": "human", "value": "first part"}, {"from": "human", "value": "second part"},
                                              {"from": "gpt", "value": "An answer."}, {"from": "human", "value": "ok thanks"}]}
    system = {"id": "sys", "conversations": [{"from": "system", "value": "be nice"}, *conversation(2)["conversations"]]}
    empty = {"id": "empty", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": ""},
                                              {"from": "human", "value": "hello?"}]}
    chats_file([leading, doubled, system, empty])
    items = {i.reference["conversation"]: i for i in load_items("sharegpt")}
    assert set(items) == {"lead", "dbl"}
    assert items["lead"].messages == [{"role": "user", "content": QUESTIONS[1]}]
    assert items["dbl"].messages == [{"role": "user", "content": "first part\n\nsecond part"}]


def test_language_and_length_caps(chats_file):
    spanish = {"id": "es", "conversations": [{"from": "human", "value": "¿Cuál es la capital de Francia, por favor?"},
                                             {"from": "gpt", "value": "París."}, {"from": "human", "value": "gracias por la respuesta"}]}
    russian = {"id": "ru", "conversations": [{"from": "human", "value": "Привет, как дела?"}, {"from": "gpt", "value": "Хорошо."},
                                             {"from": "human", "value": "Спасибо"}]}
    long = {"id": "long", "conversations": [{"from": "human", "value": "the word " * 25}, {"from": "gpt", "value": "ok"},
                                            {"from": "human", "value": "thanks"}]}
    chats_file([conversation(0), spanish, russian, long])
    english = {i.reference["conversation"] for i in load_items("sharegpt")}
    assert english == {"conv0", "long"}
    every = {i.reference["conversation"] for i in load_items("sharegpt", contexts=ContextSelection(language="any"))}
    assert every == {"conv0", "es", "ru", "long"}
    capped = {i.reference["conversation"] for i in load_items("sharegpt", contexts=ContextSelection(max_context_words=20))}
    assert capped == {"conv0"}


def test_a_seeded_selection_is_stable_and_independent_of_file_order(chats_file):
    records = [conversation(k) for k in range(40)]
    chats_file(records)
    first = [i.item_id for i in load_items("sharegpt", limit=10, seed=3)]
    assert first == [i.item_id for i in load_items("sharegpt", limit=10, seed=3)]
    assert first[:4] == [i.item_id for i in load_items("sharegpt", limit=4, seed=3)]
    chats_file(list(reversed(records)))
    assert [i.item_id for i in load_items("sharegpt", limit=10, seed=3)] == first
    assert [i.item_id for i in load_items("sharegpt", limit=10, seed=4)] != first
    assert len({*first}) == 10


def test_contexts_only_apply_to_a_dataset_of_real_conversations():
    with pytest.raises(ValueError, match="holds no real conversations"):
        load_items("gsm8k", limit=1, contexts=ContextSelection())


@pytest.mark.parametrize(("text", "english"), [("What about the second one?", True), ("ok", True), ("print(x)", True),
                                               ("Привет, как у тебя дела сегодня?", False),
                                               ("Quiero saber cuál es la mejor opción aquí", False), ("12 + 4", True)])
def test_the_language_heuristic(text, english):
    assert is_english(text) is english


def test_a_lone_surrogate_in_a_record_loads_with_a_stable_id(chats_file):
    odd = {"id": "sur", "conversations": [{"from": "human", "value": "what is \ud800 here?"}, {"from": "gpt", "value": "A lone half."},
                                          {"from": "human", "value": "ok thanks"}]}
    chats_file([odd, conversation(0)])
    items = load_items("sharegpt")
    assert [i.reference["conversation"] for i in items] == ["sur", "conv0"]
    assert items[0].messages[0]["content"] == "what is \ud800 here?"
    assert [i.item_id for i in load_items("sharegpt")] == [i.item_id for i in items]
