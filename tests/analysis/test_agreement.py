"""Agreement statistics against textbook values."""

from __future__ import annotations

import math

import pytest

from testbed.analysis.judge_quality.agreement import cohen_kappa, compare, f1_binary, fleiss_kappa


def test_cohen_kappa_textbook_example():
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_edges():
    assert cohen_kappa(["x", "y"], ["x", "y"]) == 1.0
    assert math.isnan(cohen_kappa([], []))
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0
    with pytest.raises(ValueError):
        cohen_kappa(["x"], [])


def test_fleiss_kappa_textbook_example():
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
              [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[str(cat) for cat, c in enumerate(row) for _ in range(c)] for row in counts]
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=1e-3)


def test_fleiss_equals_one_for_full_agreement():
    assert fleiss_kappa([["a", "a", "a"], ["b", "b", "b"]]) == pytest.approx(1.0)


def test_per_label_precision_recall_and_confusion():
    result = compare(["a", "a", "b", "c"], ["a", "b", "b", "c"], ["a", "b", "c", "d"])
    row = result.per_label.set_index("label")
    assert row.loc["a", "precision"] == 0.5 and row.loc["a", "recall"] == 1.0
    assert row.loc["b", "precision"] == 1.0 and row.loc["b", "recall"] == 0.5
    assert math.isnan(row.loc["d", "precision"]) and row.loc["d", "support"] == 0
    assert result.confusion.loc["a", "b"] == 1 and result.confusion.values.sum() == 4
    assert result.observed == 0.75


def test_f1_binary():
    assert f1_binary([True, True, False, False], [True, False, True, False]) == pytest.approx(0.5)
    assert math.isnan(f1_binary([False], [False]))


def test_hand_labelling_takes_the_least_sure_turns_first_and_never_one_without_a_margin():
    from testbed.analysis.judge_quality.judge_eval import hand_labelling_curve

    references = ["genuine_followup", "echo_assistant", "degenerate", "new_question"] * 5
    predicted = list(references)
    wrong = {0: "new_question", 5: "degenerate", 10: "echo_assistant", 15: "genuine_followup"}
    for i, label in wrong.items():
        predicted[i] = label
    margins: list[float | None] = [0.9] * 20
    margins[0], margins[5], margins[10] = 0.01, 0.02, 0.03
    margins[15] = None
    curve = hand_labelling_curve(predicted, references, margins, shares=(0.0, 0.1, 0.15, 1.0))
    assert list(curve.turns_by_hand) == [0, 2, 3, 19], "a turn without a margin is never handed over"
    assert curve.kappa.iloc[0] < curve.kappa.iloc[1] < curve.kappa.iloc[2] < 1.0, "the three unsure errors are fixed one by one"
    assert curve.kappa.iloc[2] == curve.kappa.iloc[3], "the sure turns were right already; the error without a margin stays"
    assert curve.followup_f1.iloc[0] == pytest.approx(2 * 4 / (2 * 4 + 2)), "turn 0 is a missed follow-up, turn 15 a false one"


def test_a_reviewer_curve_uses_the_reviewers_labels_keeps_unscored_ones_fast_and_stops_where_the_review_stopped():
    from testbed.analysis.judge_quality.judge_eval import least_sure_order, reviewer_curve

    references = ["genuine_followup", "echo_assistant", "degenerate", "new_question"] * 5
    predicted = list(references)
    predicted[0], predicted[5], predicted[10] = "new_question", "degenerate", "echo_assistant"
    margins: list[float | None] = [0.9] * 20
    margins[0], margins[5], margins[10], margins[3] = 0.01, 0.02, 0.03, 0.04
    assert least_sure_order(margins)[:4] == [0, 5, 10, 3]
    reviewed = {0: "genuine_followup", 5: "other", 10: None, 3: "new_question"}
    curve = reviewer_curve(predicted, references, margins, reviewed, shares=(0.0, 0.1, 0.2, 0.5))
    assert list(curve.share_by_hand) == [0.0, 0.1, 0.2], "0.5 would need reviews of turns nobody reviewed"
    assert list(curve.unscored_reviews) == [0, 0, 1]
    assert curve.followup_f1.iloc[1] == 1.0 and curve.kappa.iloc[1] < 1.0, "the reviewer fixed the missed follow-up, not turn 5"
    assert curve.kappa.iloc[2] == curve.kappa.iloc[1], "an unscored review keeps the fast label; a right one changes nothing"
