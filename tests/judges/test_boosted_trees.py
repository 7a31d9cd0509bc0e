"""Boosted trees exported from scikit-learn judge exactly as scikit-learn does, after a JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from testbed.judges.learned.trees import BoostedTrees

CLASSES = ["b", "a", "d", "c"]


def _fitted(seed: int = 0):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(400, 6)).astype(np.float32)
    y = np.array(["a", "b", "c"])[(x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)]
    return HistGradientBoostingClassifier(max_iter=30, max_leaf_nodes=7, random_state=seed).fit(x, y), x


def test_probabilities_equal_scikit_learns_after_a_json_round_trip(tmp_path):
    model, x = _fitted()
    trees = BoostedTrees.from_sklearn(model, CLASSES, "t-1", 0.4, "emb", {"note": "test"})
    path = tmp_path / "trees.json"
    trees.save(path)
    loaded = BoostedTrees.from_blob(json.loads(path.read_text()))
    got = loaded.probabilities(x)
    want = model.predict_proba(x)
    for k, c in enumerate(model.classes_):
        assert np.allclose(got[:, CLASSES.index(c)], want[:, k], atol=1e-8)
    assert np.all(got[:, CLASSES.index("d")] < 1e-9), "a class absent from training gets no probability"
    assert loaded.digest == trees.digest and loaded.meta == {"note": "test"}


def test_missing_values_follow_the_trained_side():
    model, x = _fitted(1)
    x[::7, 0] = np.nan
    trees = BoostedTrees.from_sklearn(model, CLASSES, "t-1", 0.4, "emb", {})
    want = model.predict_proba(x)
    got = trees.probabilities(x)
    assert np.allclose(got[:, [CLASSES.index(c) for c in model.classes_]], want, atol=1e-8)


def test_two_classes_are_refused():
    from sklearn.ensemble import HistGradientBoostingClassifier

    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    model = HistGradientBoostingClassifier(max_iter=3).fit(x, ["a"] * 10 + ["b"] * 10)
    with pytest.raises(ValueError, match="at least three classes"):
        BoostedTrees.from_sklearn(model, CLASSES, "t", 0.5, "emb", {})


@pytest.mark.parametrize("damage, field", [
    (lambda text, blob: text[: len(text) // 2], "(file)"),
    (lambda text, blob: "[1, 2]", "(top level)"),
    (lambda text, blob: json.dumps({k: v for k, v in blob.items() if k != "roots"}), "roots"),
    (lambda text, blob: json.dumps({**blob, "left": blob["left"][:-1]}), "boosted_trees"),
    (lambda text, blob: json.dumps({**blob, "right": [10 ** 9] * len(blob["right"])}), "boosted_trees"),
    (lambda text, blob: json.dumps({**blob, "kind": "linear-ish"}), "mean"),
])
def test_a_damaged_model_file_gets_one_clear_message(tmp_path, damage, field):
    from testbed.judges.learned.model import BadModelFile, load_model

    model, _ = _fitted()
    path = tmp_path / "trees.json"
    BoostedTrees.from_sklearn(model, CLASSES, "t-1", 0.4, "emb", {}).save(path)
    text = path.read_text()
    path.write_text(damage(text, json.loads(text)))
    with pytest.raises(BadModelFile) as caught:
        load_model(path)
    message = str(caught.value)
    assert str(path) in message and f"`{field}`" in message and "scripts/train_judge.py" in message
