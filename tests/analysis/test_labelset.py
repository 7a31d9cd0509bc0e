"""The labelled set's tooling: items without judge output, blind batches, disagreements, the merge rule, κ."""

from __future__ import annotations

import asyncio
import json

import pytest

from testbed.analysis.judge_quality.labelset import SHOWN, agreement, annotation_items, disagreements, merge, read_labels, write_batches
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import Store


@pytest.fixture
def items(spec_dir, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    asyncio.run(run_scenario(load_scenario(spec_dir(items={"limit": 3})), store, show_progress=False,
                             backends={"assistant": ScriptedBackend(lambda r: "It is 12."), "user": ScriptedBackend(lambda r: "Why 12?")}))
    run_id = store.runs()[0]["run_id"]
    first_question = store.turns(run_id)[0].question
    out = annotation_items(store, [run_id], exclude_questions={first_question.strip()})
    store.close()
    return out, first_question


def test_items_leave_out_excluded_questions_and_carry_no_judge_output(items):
    rows, excluded = items
    assert len(rows) == 8, "3 items x 4 variants, one item's question excluded"
    assert all(r["question"] != excluded for r in rows)
    assert all(not {"label", "followup", "judge_label", "reason"} & set(r) for r in rows)
    assert len({r["id"] for r in rows}) == 8 and {r["kind"] for r in rows} == {"probe"} and {r["turn"] for r in rows} == {1}


def test_batches_are_shuffled_and_show_only_what_an_annotator_needs(items, tmp_path):
    rows, _ = items
    paths = write_batches(rows, tmp_path / "batches" / "probe", 3, seed=1)
    assert [p.name for p in paths] == ["probe-01.jsonl", "probe-02.jsonl", "probe-03.jsonl"]
    shown = [json.loads(line) for p in paths for line in p.read_text().splitlines()]
    assert sorted(r["id"] for r in shown) == sorted(r["id"] for r in rows) and all(tuple(r) == SHOWN for r in shown)
    assert [r["id"] for r in shown] != [r["id"] for r in rows] or len(rows) < 3


def test_disagreements_go_to_a_third_whose_label_settles_them(items, tmp_path):
    rows, _ = items
    a = {r["id"]: "genuine_followup" for r in rows}
    b = dict(a, **{rows[0]["id"]: "echo_assistant", rows[1]["id"]: "degenerate"})
    todo = disagreements(rows, a, b)
    assert [r["id"] for r in todo] == [rows[0]["id"], rows[1]["id"]]
    merged = merge(rows, a, b, {rows[0]["id"]: "echo_assistant", rows[1]["id"]: "genuine_followup"})
    assert [m["label"] for m in merged[:3]] == ["echo_assistant", "genuine_followup", "genuine_followup"]
    assert merged[0]["annotators"] == ["genuine_followup", "echo_assistant"] and merged[0]["adjudicated"] and not merged[2]["adjudicated"]
    assert merged[0]["followup"] is False and merged[1]["followup"] is True
    stats = agreement(rows, a, b)
    assert stats["items"] == 8 and stats["raw_agreement"] == 6 / 8 and stats["kappa"] < 1


def test_an_unknown_label_in_an_annotators_file_is_refused(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "x", "label": "genuine_followup"}\n{"id": "y", "label": "great"}\n')
    with pytest.raises(ValueError, match="a.jsonl:2: unknown label 'great'"):
        read_labels([path])


def test_a_real_persons_reference_turn_is_never_an_item(spec_dir, tmp_path):
    from dataclasses import replace

    from testbed.scenarios.human_reference import HUMAN_MODE
    from testbed.store.records import EpisodeOutcome

    store = Store(tmp_path / "s.sqlite")
    asyncio.run(run_scenario(load_scenario(spec_dir(items={"limit": 1})), store, show_progress=False,
                             backends={"assistant": ScriptedBackend(lambda r: "It is 12."), "user": ScriptedBackend(lambda r: "Why 12?")}))
    run_id = store.runs()[0]["run_id"]
    episode = store.episodes(run_id)[0]
    messages = store.messages(run_id, episode.key.episode_id)
    human = replace(episode.key, episode_id="human-ref", user_mode=HUMAN_MODE, user_model="human")
    store.write_episode(run_id, EpisodeOutcome(human, messages, "done", "max_turns"))
    assert any(t.episode_id == "human-ref" for t in store.turns(run_id))
    items = annotation_items(store, [run_id])
    assert items and all(i["mode"] != HUMAN_MODE for i in items)
    store.close()
