"""The learned judge's projected embedding, later-turn weights and spent held-out files: a model trained with a
projection judges exactly what its trainer fitted, the projection travels in the model file, and held-out rows are
read for training only from a file named as spent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from testbed.analysis.judge_quality import judge_training as training
from testbed.conversation_context import from_dicts
from testbed.judges.learned.embedding import default_embedder
from testbed.judges.learned.features import CONVERSATION, featurise
from testbed.judges.learned.judge import LearnedJudge, ModelMismatch
from testbed.judges.learned.projection import META_KEY, Projection, fit_projection
from testbed.judges.verdict import JudgeInput

GRID = {"trees": ({"learning_rate": 0.2, "max_iter": 30, "max_leaf_nodes": 7, "l2_regularization": 1.0},)}


def _rows(n: int, split: str = "train") -> list[dict]:
    """Follow-ups, echoes and loops over varied requests; every third row was labelled in its conversation."""
    rows = []
    for k in range(n):
        q = f"How do I cook dish number {k} with {('rice', 'beans', 'pasta')[k % 3]}?"
        a = f"Boil the {('rice', 'beans', 'pasta')[k % 3]} for {10 + k % 7} minutes, then season it."
        turn, label = ((f"Why boil it for {10 + k % 7} minutes and not longer?", "genuine_followup"), (a, "echo_assistant"),
                       ("boil boil boil " * 5, "degenerate"))[k % 3]
        row = {"id": f"{split}{k}", "question": q, "assistant": a, "user_turn": turn, "label": label, "conversation": f"{split}-c{k}",
               "split": split}
        if k % 3 == 0:
            row["context"] = [{"role": "assistant", "content": "Which dish?"}, {"role": "user", "content": q}]
        rows.append(row)
    return rows


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _train(tmp_path, **options):
    data = _write(tmp_path / "rows.jsonl", _rows(90) + _rows(12, "heldout"))
    grids, training.GRIDS = training.GRIDS, GRID
    try:
        model, report = training.train(data, "learned-p", default_embedder(), kind="trees", seed=3, features=CONVERSATION,
                                       log=lambda _: None, **options)
    finally:
        training.GRIDS = grids
    path = tmp_path / "model.json"
    model.save(path)
    return path, report


def test_a_projected_model_keeps_its_projection_and_judges_what_training_fitted(tmp_path):
    from sklearn.ensemble import HistGradientBoostingClassifier

    path, report = _train(tmp_path, projection_size=4, later_weight=2.0)
    judge = LearnedJudge("learned", path)
    assert judge.projection is not None and judge.projection.size == 4 and report["later_weight"] == 2.0
    rows = _rows(90)
    items = [JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"], from_dicts(r.get("context") or [])) for r in rows]
    x, _ = featurise(items, judge.embedder, CONVERSATION, judge.projection)
    assert x.shape[1] == len(training.feature_names(4, CONVERSATION))
    weights = np.asarray([2.0 if "context" in r else 1.0 for r in rows])
    refit = HistGradientBoostingClassifier(**GRID["trees"][0], early_stopping=False, random_state=3).fit(
        x, [r["label"] for r in rows], sample_weight=weights)
    ours = judge.probabilities(items)[0][:, [judge.trained.classes.index(c) for c in refit.classes_]]
    assert np.allclose(ours, refit.predict_proba(x), atol=1e-6), "the judge's features and the trainer's are the same columns"


def test_the_projection_is_the_leading_principal_directions_and_round_trips():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6)) * np.array([5.0, 3.0, 1.0, 0.1, 0.1, 0.1])
    p = fit_projection(x, 2)
    assert np.allclose(p.components @ p.components.T, np.eye(2), atol=1e-9)
    assert np.argmax(np.abs(p.components[0])) == 0 and np.argmax(np.abs(p.components[1])) == 1
    again = Projection.from_meta({META_KEY: p.to_meta()})
    assert np.allclose(again.apply(x), p.apply(x), atol=1e-5) and Projection.from_meta({}) is None


def test_a_model_whose_projection_is_broken_is_refused_with_what_to_do(tmp_path):
    path, _ = _train(tmp_path, projection_size=3)
    blob = json.loads(path.read_text())
    blob["meta"][META_KEY]["components"] = [[0.0, 1.0]]
    path.write_text(json.dumps(blob))
    with pytest.raises(ModelMismatch, match="embedding_projection.*retrain"):
        LearnedJudge("learned", path)


def test_held_out_rows_are_trained_on_only_from_a_file_named_spent(tmp_path):
    _, report = _train(tmp_path)
    assert report["turns"] == 90, "held-out rows of a data file are never read"
    spent = _write(tmp_path / "spent.jsonl", _rows(15, "heldout"))
    data = _write(tmp_path / "rows.jsonl", _rows(90))
    labelled = training.load_labelled(data, default_embedder(), CONVERSATION, spent=[spent])
    assert len(labelled.labels) == 105 and labelled.rows[-1]["split"] == "heldout"
    assert labelled.weights(2.0).tolist().count(2.0) == 30 + 5 and labelled.weights(1.0) is None
