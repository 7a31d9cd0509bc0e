"""The learned judge's conversation feature set: trained on turns whose label only the conversation decides, it
tells them apart where a turn-only model cannot; held-out rows never reach training."""

from __future__ import annotations

import json

import pytest

from testbed.analysis.judge_quality import judge_training as training
from testbed.conversation_context import from_dicts
from testbed.judges.learned.embedding import default_embedder
from testbed.judges.learned.features import CONVERSATION, TURN, feature_names, featurise
from testbed.judges.learned.judge import LearnedJudge
from testbed.judges.verdict import JudgeInput
from testbed.transcript import ASSISTANT, USER

GRID = {"trees": ({"learning_rate": 0.2, "max_iter": 30, "max_leaf_nodes": 7, "l2_regularization": 1.0},)}


def _rows(n: int) -> list[dict]:
    """Pairs of turns identical but for the conversation before them: the first asking reacts to the answer, the same
    words after the same answer once more restate the user's own turn (and a few loops, so trees see three classes)."""
    rows = []
    for k in range(n):
        q = f"Plan a trip to city number {k} for me."
        ask = f"Is the museum in city {k} open on Sundays, and how much are tickets?"
        first = {"id": f"a{k}", "question": q, "assistant": f"Visit the museum of city {k} and the old port.", "user_turn": ask,
                 "context": [], "label": "genuine_followup", "conversation": f"c{k}", "split": "train"}
        again = {"id": f"b{k}", "question": q, "assistant": f"Visit the museum of city {k} and the old port.", "user_turn": ask,
                 "context": [{"role": ASSISTANT, "content": f"Visit the museum of city {k} and the old port."}, {"role": USER, "content": ask}],
                 "label": "restate_question", "conversation": f"c{k}", "split": "train"}
        loop = {"id": f"d{k}", "question": q, "assistant": "ok", "user_turn": "ok " * 12, "context": [], "label": "degenerate",
                "conversation": f"d{k}", "split": "train"}
        rows += [first, again] + ([loop] if k % 3 == 0 else [])
    rows.append({**rows[0], "id": "held", "split": "heldout", "label": "degenerate"})
    return rows


def _train(tmp_path, features: str):
    data = tmp_path / f"rows-{features}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(60)))
    grids, training.GRIDS = training.GRIDS, GRID
    try:
        model, report = training.train(data, f"learned-{features}", default_embedder(), kind="trees", seed=1, features=features,
                                       log=lambda _: None)
    finally:
        training.GRIDS = grids
    path = tmp_path / f"{features}.json"
    model.save(path)
    return LearnedJudge("learned", path), report


def test_only_the_conversation_set_tells_a_reaction_from_the_same_words_said_again(tmp_path):
    judge, report = _train(tmp_path, CONVERSATION)
    assert report["features"] == CONVERSATION and judge.features == CONVERSATION
    assert report["turns"] == 140 and report["conversations"] == 80, "the held-out row is never read, and CV groups by conversation"
    rows = [r for r in _rows(70)[140:] if r["label"] != "degenerate" and r["split"] == "train"]
    verdicts = judge.judge_many([JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"], from_dicts(r["context"])) for r in rows])
    assert [v.label for v in verdicts] == [r["label"] for r in rows]
    turn_only, _ = _train(tmp_path, TURN)
    assert turn_only.features == TURN, "a model is fed the set it was trained on"
    assert len({v.label for v in turn_only.judge_many([JudgeInput(r["id"], r["question"], r["assistant"], r["user_turn"]) for r in rows])}) \
        < len({r["label"] for r in rows}), "without the conversation the pairs are the same input"


def test_the_conversation_set_adds_its_columns_after_the_turn_set():
    embedder = default_embedder()
    item = JudgeInput("t", "q?", "Do you like rice?", "Yes, I like rice.")
    turn, _ = featurise([item], embedder, TURN)
    conv, _ = featurise([item], embedder, CONVERSATION)
    assert conv.shape[1] == len(feature_names(embedder.dim, CONVERSATION)) == turn.shape[1] + 11
    assert (conv[:, :turn.shape[1]] == turn).all()
    with pytest.raises(ValueError, match="unknown feature set"):
        featurise([item], embedder, "bogus")
