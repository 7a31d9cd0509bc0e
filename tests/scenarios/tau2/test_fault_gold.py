"""The simulator-fault gold set's episodes: exported without τ²'s text, loaded back exactly as they ran; its split is
fixed before labels; the agreement and scoring arithmetic on hand-made labels."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from helpers import REPO
from tau2_faulty_run import faulty_run
from testbed.scenarios.tau2.domains import domain
from testbed.analysis.tau2 import fault_gold_labels as labels
from testbed.scenarios.tau2.fault_gold import GoldMismatch, export_episode, load_episode, split_of, user_turns
from testbed.store.frames import episodes_df


@pytest.fixture
def exported(tmp_path, store):
    """The faulty scripted run's episodes, stored and exported: (stored messages by id, records)."""
    run_id, _ = asyncio.run(faulty_run(tmp_path, store))
    episodes = {e.episode_id: e for e in episodes_df(store, run_id, exact=True).itertuples(index=False)}
    stored = dict(store.iter_messages(run_id))
    return stored, [export_episode(episodes[eid], "mock", messages) for eid, messages in stored.items()]


def test_an_exported_episode_holds_no_policy_and_no_tool_result(exported):
    stored, records = exported
    policy = domain("mock").policy
    for record in records:
        text = json.dumps(record)
        assert all(m["role"] != "system" for m in record["messages"])
        assert all(m["content"] is None for m in record["messages"] if m["role"] == "tool")
        results = [m.content for m in stored[record["id"].split("/")[1]] if m.role == "tool"]
        assert all(r not in text for r in results if len(r) > 20)
        assert policy[:200] not in text


def test_a_loaded_episode_is_the_stored_one(exported):
    stored, records = exported
    assert any(m["role"] == "tool" for r in records for m in r["messages"])
    for record in records:
        original = [m for m in stored[record["id"].split("/")[1]] if m.role != "system"]
        loaded = load_episode(json.loads(json.dumps(record))).messages
        assert [(m.role, m.content, m.turn_index, m.tool_calls, m.tool_result) for m in loaded] == \
               [(m.role, m.content, m.turn_index, m.tool_calls, m.tool_result) for m in original]
        assert [m.turn_index for m in user_turns(loaded)]


def test_a_replay_that_differs_from_the_stored_run_is_refused(exported):
    _, records = exported
    record = next(r for r in records if any(m.get("tool_result") for m in r["messages"]))
    for m in record["messages"]:
        if m.get("tool_result"):
            m["tool_result"]["error"] = not m["tool_result"]["error"]
            break
    with pytest.raises(GoldMismatch, match="replayed with error"):
        load_episode(record)
    record["task_id"] = "no_such_task"
    with pytest.raises(GoldMismatch, match="no task 'no_such_task'"):
        load_episode(record)


def test_the_split_is_a_fixed_hash_of_the_episode():
    keys = [f"mock/{i:016x}" for i in range(400)]
    splits = [split_of(k) for k in keys]
    assert splits == [split_of(k) for k in keys]
    assert 0.3 < splits.count("heldout") / len(splits) < 0.5


def test_agreement_and_settling_on_hand_made_labels(tmp_path):
    clean = {"tags": [], "severity": None}
    a = {"e/1#2": {"tags": ["hallucination"], "severity": "minor"}, "e/1#4": clean, "e/1#6": clean,
         "e/1#8": {"tags": ["guideline_violation"], "severity": "critical_hindered"}}
    b = {"e/1#2": {"tags": ["hallucination"], "severity": "minor"}, "e/1#4": clean,
         "e/1#6": {"tags": ["hallucination"], "severity": "minor"},
         "e/1#8": {"tags": ["guideline_violation"], "severity": "minor"}}
    result = labels.agreement(a, b)
    assert result["turns"] == 4 and result["error_agreement"] == 0.75
    assert result["error_kappa"] == pytest.approx(0.5)
    assert labels.disputed(a, b) == ["e/1#6", "e/1#8"]
    episodes = tmp_path / "episodes.jsonl"
    turns = [{"turn": t, "role": "user", "speaker": "m", "content": "x"} for t in (2, 4, 6, 8)]
    episodes.write_text(json.dumps({"id": "e/1", "split": "heldout", "messages": turns}) + "\n")
    c = {"e/1#6": clean, "e/1#8": {"tags": ["guideline_violation"], "severity": "critical_hindered"}}
    rows = labels.settle(a, b, c, episodes)
    assert [(r["id"], r["settled_by"], r["tags"]) for r in rows] == [
        ("e/1#2", "agreement", ["hallucination"]), ("e/1#4", "agreement", []), ("e/1#6", "third", []),
        ("e/1#8", "third", ["guideline_violation"])]
    with pytest.raises(ValueError, match="third label is missing"):
        labels.settle(a, b, {}, episodes)


def test_precision_and_recall_carry_their_counts():
    m = labels.prf(3, 4, 6)
    assert (m["precision"], m["recall"]) == (0.75, 0.5)
    assert m["f1"] == pytest.approx(0.6)
    assert m["precision_ci"][0] < 0.75 < m["precision_ci"][1]


def test_an_invalid_label_is_refused_by_name(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "e/1#2", "tags": ["made_up"], "severity": "minor"}) + "\n")
    with pytest.raises(ValueError, match="e/1#2"):
        labels.read_labels(path)
    bench = REPO / "benchmarks" / "fault_gold.py"
    out = subprocess.run([sys.executable, str(bench), "agree", str(path), str(path)], capture_output=True, text=True)
    assert out.returncode == 1 and "e/1#2: tags ['made_up']" in out.stderr and "Traceback" not in out.stderr


def test_a_tasks_scripted_history_is_not_a_turn_to_label():
    from testbed.scenarios.tau2.trajectory import SCRIPTED
    from testbed.transcript import Message

    messages = [Message("user", "from the task's history", SCRIPTED, 1), Message("assistant", "ok", SCRIPTED, 2),
                Message("user", "written by the model", "m", 3)]
    assert [m.turn_index for m in user_turns(messages)] == [3]


def test_a_detector_is_scored_per_tag_and_per_episode_on_one_split(tmp_path):
    clean = {"tags": [], "severity": None}
    rows = [{"id": "e/1#2", "split": "heldout", "tags": ["hallucination"], "severity": "critical_hindered"},
            {"id": "e/1#4", "split": "heldout", **clean},
            {"id": "e/2#2", "split": "heldout", **clean},
            {"id": "e/3#2", "split": "dev", "tags": ["hallucination"], "severity": "minor"}]
    path = tmp_path / "labels.jsonl"
    labels.write_jsonl(path, rows)
    predicted = {"e/1#2": {"tags": ["hallucination"], "severity": "minor"}, "e/1#4": clean,
                 "e/2#2": {"tags": ["guideline_violation"], "severity": "critical_hindered"}, "e/3#2": clean}
    result = labels.score(path, "heldout", predicted, "some-detector@1")
    assert (result["turns"], result["episodes"], result["detector"]) == (3, 2, "some-detector@1")
    assert (result["any"]["tp"], result["any"]["flagged"], result["any"]["true"]) == (1, 2, 1)
    assert result["hallucination"]["precision"] == 1.0 and result["guideline_violation"]["flagged"] == 1
    assert result["episodes_any"] == {"true_positives": 1, "false_negatives": 0, "true_negatives": 0, "false_positives": 1}
    assert result["episodes_critical_hindered"] == {"true_positives": 0, "false_negatives": 1, "true_negatives": 0,
                                                    "false_positives": 1}
