"""The learned judge: trained by grouped CV on labelled turns, saved small, loaded, and judging consistently."""

from __future__ import annotations

import json

import numpy as np
import pytest

from testbed.analysis.judge_quality import judge_training as training
from testbed.judges.learned.embedding import default_embedder
from testbed.judges.learned.judge import LearnedJudge, ModelMismatch
from testbed.judges.learned.model import load_model
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput

TEMPLATES = {
    "genuine_followup": "Why did you add {b} to {a}? I thought he gave some of them away first.",
    "restate_question": "{q}",
    "echo_assistant": "{ans} Is there anything else I can help you with today?",
    "degenerate": "ok ok ok ok ok ok ok ok ok ok ok ok",
}


def synthetic_rows(n: int) -> list[dict]:
    rows = []
    for k in range(n):
        q = f"Tom has {k} apples and buys {k + 3} more. How many apples does he have now?"
        ans = f"Tom starts with {k} apples. He buys {k + 3} more, so he has {2 * k + 3} apples."
        label = list(TEMPLATES)[k % 4]
        rows.append({"id": f"s{k}", "question": q if k % 8 else q + " Explain.", "assistant": ans,
                     "user_turn": TEMPLATES[label].format(a=k, b=k + 3, q=q, ans=ans), "label": label})
    return rows


SMALL_GRIDS = {"linear": ({"C": 0.1, "class_weight": None}, {"C": 1.0, "class_weight": None}),
               "trees": ({"learning_rate": 0.1, "max_iter": 20, "max_leaf_nodes": 7, "l2_regularization": 1.0},
                         {"learning_rate": 0.2, "max_iter": 10, "max_leaf_nodes": 7, "l2_regularization": 1.0})}


def _train(folder, kind: str):
    data = folder / "labels.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in synthetic_rows(160)))
    grids = training.GRIDS
    training.GRIDS = SMALL_GRIDS
    try:
        return training.train(data, "learned-test", default_embedder(), kind=kind, seed=1, log=lambda _: None)
    finally:
        training.GRIDS = grids


@pytest.fixture(scope="module", params=["linear", "trees"])
def trained(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"learned-{request.param}")
    model, report = _train(folder, request.param)
    path = folder / "model.json"
    model.save(path)
    return path, report


def test_training_reports_grouped_cv_and_saves_a_small_versioned_model(trained):
    path, report = trained
    assert report["folds"] == 5 and report["turns"] == 160 and report["conversations"] == 160
    assert len(report["trials"]) == 2 and report["chosen"]["kappa"] > 0.9, "the synthetic labels are separable"
    assert path.stat().st_size < 200_000
    loaded = load_model(path)
    assert type(loaded).__name__ == {"linear": "LinearModel", "trees": "BoostedTrees"}[report["kind"]]
    assert loaded.version == "learned-test" and loaded.meta["data_sha256"] == report["data_sha256"]
    assert loaded.classes == list(taxonomy().labels)


def test_the_same_seed_and_data_give_the_same_model(trained, tmp_path):
    path, report = trained
    again, _ = _train(tmp_path, report["kind"])
    assert again.digest == load_model(path).digest


def test_verdicts_carry_both_decisions_a_probability_and_a_reason(trained):
    path, _ = trained
    judge = LearnedJudge("learned", path)
    rows = synthetic_rows(24)
    verdicts = judge.judge_many([JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"]) for r in rows])
    assert judge.identity.version.startswith("learned-test+")
    for row, verdict in zip(rows, verdicts):
        assert verdict.followup == (verdict.label == "genuine_followup")
        p = json.loads(verdict.raw)
        assert abs(sum(p["probabilities"].values()) - 1) < 1e-3 and verdict.reason.startswith("p(followup)=")
    assert sum(v.label == r["label"] for v, r in zip(verdicts, rows)) >= 22


def test_the_trainer_scores_with_the_judges_own_rule(trained, monkeypatch):
    from testbed.judges.learned import decision
    from testbed.judges.learned import judge as judge_module

    assert training.decide_label is decision.decide_label is judge_module.decide_label, "one rule, owned by the judge"
    calls = {"trainer": [], "judge": []}

    def spy(who):
        def decide_label(p, classes, threshold):
            calls[who].append((p.copy(), list(classes), threshold))
            return decision.decide_label(p, classes, threshold)
        return decide_label

    monkeypatch.setattr(training, "decide_label", spy("trainer"))
    monkeypatch.setattr(judge_module, "decide_label", spy("judge"))
    path, _ = trained
    judge = LearnedJudge("learned", path)
    rows = synthetic_rows(16)
    items = [JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"]) for r in rows]
    proba, _ = judge.probabilities(items)
    expected = training.decide(proba, judge.trained.followup_threshold)
    assert [v.label for v in judge.judge_many(items)] == expected, "the judge decides as the trainer scored it"
    assert len(calls["trainer"]) == len(calls["judge"]) == 16
    for (p_t, classes_t, t_t), (p_j, classes_j, t_j) in zip(calls["trainer"], calls["judge"]):
        assert np.allclose(p_t, p_j) and classes_t == classes_j and t_t == t_j == judge.trained.followup_threshold


def _reordered(model, order: list[int]):
    """The same model with its classes saved in `order` (probability columns and per-class parameters moved alike)."""
    from dataclasses import replace

    classes = [model.classes[i] for i in order]
    if hasattr(model, "weights"):
        return replace(model, classes=classes, weights=model.weights[:, order], bias=model.bias[order])
    inverse = np.argsort(order)
    return replace(model, classes=classes, baseline=model.baseline[order], tree_class=inverse[model.tree_class])


def test_the_rule_reads_classes_by_name_not_by_taxonomy_position():
    from testbed.judges.learned.decision import decide_label

    labels = list(taxonomy().labels)
    fu = taxonomy().followup_label
    order = list(reversed(range(len(labels))))
    other = [labels[i] for i in order]
    assert other != labels and other.index(fu) != labels.index(fu)
    rng = np.random.default_rng(3)
    for p in rng.dirichlet(np.ones(len(labels)) * 0.5, size=300):
        for threshold in (0.2, 0.5, 0.8):
            assert decide_label(p[order], other, threshold) == decide_label(p, labels, threshold)
    top_followup = np.full(len(labels), 0.05)
    top_followup[labels.index(fu)], top_followup[labels.index("echo_assistant")] = 0.45, 0.2
    assert decide_label(top_followup[order], other, 0.5) == "echo_assistant", "below the threshold: the second class"
    assert decide_label(top_followup[order], other, 0.4) == fu


def test_a_model_saved_in_another_class_order_judges_alike(trained, tmp_path):
    path, _ = trained
    model = load_model(path)
    order = list(reversed(range(len(model.classes))))
    other = tmp_path / "reordered.json"
    _reordered(model, order).save(other)
    original, reordered = LearnedJudge("learned", path), LearnedJudge("learned", other)
    assert reordered.trained.classes != list(taxonomy().labels)
    rows = synthetic_rows(24)
    items = [JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"]) for r in rows]
    p_original, _ = original.probabilities(items)
    p_reordered, _ = reordered.probabilities(items)
    assert np.allclose(p_reordered, p_original[:, order], atol=1e-6)
    got, want = reordered.judge_many(items), original.judge_many(items)
    assert [(v.label, v.followup) for v in got] == [(v.label, v.followup) for v in want]


def test_a_model_made_with_another_embedding_is_refused(trained, tmp_path):
    path, _ = trained
    model = load_model(path)
    model.embedding = "0" * 12
    other = tmp_path / "other.json"
    model.save(other)
    with pytest.raises(ModelMismatch, match="retrain"):
        LearnedJudge("learned", other)


def test_an_unknown_model_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown model kind 'forest'; use one of linear, trees"):
        training.train(tmp_path / "labels.jsonl", "x", default_embedder(), kind="forest")


def test_calibration_error_is_zero_for_calibrated_and_large_for_overconfident_probabilities():
    from testbed.analysis.judge_quality.judge_training import calibration_error

    p = np.array([0.2] * 10 + [0.8] * 10)
    truth = [k < 2 for k in range(10)] + [k < 8 for k in range(10)]
    assert calibration_error(p, truth) == pytest.approx(0.0)
    assert calibration_error(np.array([0.99] * 10), [False] * 10) == pytest.approx(0.99)


def test_several_labelled_files_are_pooled_and_scored_per_kind(tmp_path):
    rows = synthetic_rows(160)
    for k, row in enumerate(rows):
        row["kind"] = "dialogue" if k >= 96 else "probe"
    first, second = tmp_path / "labels.jsonl", tmp_path / "labels-later.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows[:96]))
    second.write_text("".join(json.dumps(r) + "\n" for r in rows[96:]))
    grids, training.GRIDS = training.GRIDS, SMALL_GRIDS
    try:
        _, report, by_kind_errors = training.train_with_error_rates([first, second], "learned-test", default_embedder(), kind="trees",
                                                            seed=1, log=lambda _: None)
    finally:
        training.GRIDS = grids
    errors = by_kind_errors[training.ALL_KINDS]
    assert report["turns"] == 160 and report["data"] == "labels.jsonl+labels-later.jsonl" and errors.source.endswith("labels-later.jsonl")
    assert sorted(by_kind_errors) == ["all", "dialogue", "probe"] and by_kind_errors["dialogue"].source.endswith("(dialogue turns)")
    assert len(by_kind_errors["probe"].turns) == 96 and len(by_kind_errors["dialogue"].turns) == 64
    assert by_kind_errors["dialogue"].turns == errors.turns[96:], "each kind's counts are its own turns, margins included"
    by_kind = report["cv_by_kind"]
    assert sorted(by_kind) == ["dialogue", "probe"] and (by_kind["probe"]["turns"], by_kind["dialogue"]["turns"]) == (96, 64)
    assert by_kind["dialogue"]["followups"] == sum(r["label"] == "genuine_followup" for r in rows[96:]) == 16
    assert by_kind["dialogue"]["echo_assistant_turns"] == 16 and by_kind["dialogue"]["meta_planning_turns"] == 0
    assert by_kind["probe"]["kappa"] > 0.9 and by_kind["dialogue"]["drift_f1"] > 0.9, "the synthetic labels are separable"
    reviewed = by_kind["dialogue"]["reviewed"]
    assert list(reviewed) == ["0", "0.1", "0.2", "0.25", "0.3", "0.4", "0.5"] and reviewed["0"][0] == by_kind["dialogue"]["kappa"]
    assert reviewed["0.5"][0] >= reviewed["0"][0], "reference labels on the least sure half can only help"


def test_scores_by_kind_count_drift_labels_apart_from_the_rest():
    rows = [{"kind": "dialogue"}] * 4 + [{}] * 2
    labels = ["echo_assistant", "meta_planning", "genuine_followup", "degenerate", "echo_assistant", "new_question"]
    predicted = ["meta_planning", "meta_planning", "genuine_followup", "echo_assistant", "echo_assistant", "new_question"]
    got = training.scores_by_kind(rows, labels, predicted)
    assert got["dialogue"]["drift_f1"] == pytest.approx(0.8), "3 predicted drift, 2 of them right, 2 true drift"
    assert got["dialogue"]["meta_planning_f1"] == pytest.approx(2 / 3, abs=1e-3) and got["dialogue"]["echo_assistant_f1"] == 0.0
    probe = got["probe"]
    assert (probe["turns"], probe["followups"], probe["drift_f1"], probe["kappa"]) == (2, 0, 1.0, 1.0), "rows without a kind are probe turns"
