"""Surface features of a user turn: the language heuristic, the indicators and the overlap shares."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from testbed.analysis.realism.features import (
    SURFACE_FEATURES,
    english_mask,
    feature_matrix,
    has_code,
    has_question,
    has_thanks,
    is_english,
    overlap_share,
    word_counts,
)


@pytest.mark.parametrize(("text", "english"), [
    ("how does the loop end", True),
    ("ok", True),
    ("12345 67", True),
    ("", True),
    ("import numpy as np\nx = np.arange(10)\nprint(x)", True),
    ("puedes explicarlo otra vez por favor", False),
    ("请再详细解释一下这个", False),
    ("Объясни ещё раз, пожалуйста", False),
    ("hola", True),
])
def test_is_english_follows_the_documented_heuristic(text, english):
    assert is_english(text) is english


def test_the_vectorised_detector_agrees_with_the_single_text_one_on_any_string_dtype():
    texts = ["the cat sat on the mat", "请再解释一下", "puedes explicarlo otra vez por favor", None]
    expected = [True, False, False, True]
    assert english_mask(pd.Series(texts, dtype=object)).tolist() == expected
    assert english_mask(pd.Series(texts, dtype="str")).tolist() == expected


def test_indicators_of_questions_thanks_code_and_words():
    texts = pd.Series(["Thanks! why?", "thank you", "```\nx\n```", "int x = 1;", "plain words here", "什么？"])
    assert has_question(texts).tolist() == [True, False, False, False, False, True]
    assert has_thanks(texts).tolist() == [True, True, False, False, False, False]
    assert has_code(texts).tolist() == [False, False, True, True, False, False]
    assert word_counts(texts).tolist() == [2, 2, 3, 4, 3, 1]


def test_overlap_is_the_share_of_the_turns_words_found_on_its_own_row():
    texts = pd.Series(["the loop ends", "Loop loop again", "", "nothing shared"], index=[10, 11, 12, 13])
    others = pd.Series(["a loop that ends", "the loop", "anything", "the loop"], index=[10, 11, 12, 13])
    assert overlap_share(texts, others).tolist() == pytest.approx([2 / 3, 2 / 3, 0.0, 0.0])


def test_the_feature_matrix_has_one_named_column_per_feature_and_reads_each_turn():
    turns = pd.DataFrame({
        "text": ["Can you explain the loop again?", "thanks!"],
        "answer": ["The loop runs twice.", "The loop runs twice."],
        "question": ["explain the loop", "explain the loop"],
    }, index=[5, 6])
    matrix = feature_matrix(turns)
    assert list(matrix.columns) == [f.key for f in SURFACE_FEATURES]
    assert list(matrix.index) == [5, 6]
    first, second = matrix.loc[5], matrix.loc[6]
    assert first["log_words"] == pytest.approx(np.log1p(6)) and second["log_words"] == pytest.approx(np.log1p(1))
    assert first["question_marks"] > 0 and second["question_marks"] == 0
    assert second["thanks"] == 1 and first["thanks"] == 0
    assert first["imperative_opening"] == 1 and second["imperative_opening"] == 0
    assert first["question_overlap"] == pytest.approx(3 / 6)
    assert first["second_person"] == pytest.approx(1 / 6)
    assert second["starts_lowercase"] == 1 and first["starts_lowercase"] == 0
    assert second["exclamations"] > 0
    assert len({f.more for f in SURFACE_FEATURES}) == len(SURFACE_FEATURES)
