"""Conversation graphs: source edges point at the turn really copied, GraphML round-trips, pictures render."""

from __future__ import annotations

import math

import networkx as nx
import pandas as pd
import pytest

from testbed.analysis.drift import drift_onsets, survival_curve
from testbed.analysis.figures.graph_drawing import draw_episode, draw_survival, draw_transitions
from testbed.analysis.graphs import (
    START, episode_graph, label_sequences, label_transition_graph, read_graphml, similarity, write_graphml,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
QUESTION = "A farmer has 17 sheep and buys 5 more each week. How many sheep does the farmer have after 4 weeks?"
ANSWER_1 = (f"You asked: {QUESTION} Each week adds 5 sheep, so 4 weeks add 20 sheep. "
            "The farmer has 17 + 20 = 37 sheep after 4 weeks.")
ANSWER_3 = "Each week adds 5 sheep, so 4 weeks add 20 sheep. Starting from 17 sheep, the farmer ends with 37 sheep after 4 weeks."


def messages(*turns: tuple[str, str]) -> list[dict]:
    return [{"turn_index": i, "role": role, "speaker": "dataset" if i == 0 else role, "content": text}
            for i, (role, text) in enumerate(turns)]


def five_turns() -> list[dict]:
    """Turn 2 restates the question (which answer 1 also quotes); turn 4 echoes answer 3 (which overlaps answer 1)."""
    return messages(("user", QUESTION), ("assistant", ANSWER_1), ("user", QUESTION), ("assistant", ANSWER_3),
                    ("user", ANSWER_3 + " Let me know if you need more help!"))


def sources(graph: nx.DiGraph) -> dict[int, tuple[int, str, float]]:
    return {a: (b, d["kind"], d["weight"]) for a, b, d in graph.edges(data=True) if d["kind"] != "reply"}


def test_source_edges_point_at_the_copied_earlier_turn():
    graph = episode_graph(five_turns(), {2: "restate_question", 4: "echo_assistant"})
    found = sources(graph)
    assert found[2][:2] == (0, "restates"), "the question, not the answer that quotes it"
    assert found[4][:2] == (3, "echoes"), "the answer it copies, not the earlier answer it overlaps"
    assert set(found) == {2, 4} and all(0.5 <= w <= 1.0 for _, _, w in found.values())
    assert [(a, b) for a, b, d in graph.edges(data=True) if d["kind"] == "reply"] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert all(d["weight"] == 1.0 for _, _, d in graph.edges(data=True) if d["kind"] == "reply")


def test_node_attributes_mark_labels_drift_and_onset():
    graph = episode_graph(five_turns(), {2: "restate_question", 4: "echo_assistant", 1: "echo_assistant"})
    nodes = graph.nodes
    assert [nodes[n]["label"] for n in range(5)] == ["", "", "restate_question", "", "echo_assistant"]
    assert [nodes[n]["ordinal"] for n in range(5)] == [0, 0, 1, 0, 2]
    assert nodes[4]["drift"] and nodes[4]["onset"] and not nodes[2]["drift"] and not nodes[1]["drift"]
    assert nodes[0]["speaker"] == "dataset" and nodes[1]["role"] == "assistant"
    assert nodes[1]["excerpt"] == " ".join(ANSWER_1.split())[:80] and "\n" not in nodes[1]["excerpt"]
    assert nodes[3]["words"] == len(ANSWER_3.split())


def test_original_follow_up_and_filler_have_no_source_edge():
    dialogue = messages(("system", QUESTION), ("user", QUESTION), ("assistant", ANSWER_3),
                        ("user", "Why does each week add exactly 5 and not 17 sheep?"), ("assistant", "Because he buys 5 a week."),
                        ("user", "Thanks!"), ("assistant", "You're welcome."), ("user", QUESTION))
    found = sources(episode_graph(dialogue, {}))
    assert 3 not in found and 5 not in found
    assert found[7][:2] == (1, "restates"), "system messages are never a source"
    assert similarity("Thanks!", "Thanks! You're welcome.")[0] < 0.5


def test_only_later_drift_turns_after_the_first_are_not_onset():
    dialogue = messages(("user", QUESTION), ("assistant", ANSWER_3), ("user", "First, I need to plan."), ("assistant", "ok"),
                        ("user", "The user wants an answer."))
    graph = episode_graph(dialogue, {2: "meta_planning", 4: "meta_planning"})
    assert graph.nodes[2]["onset"] and graph.nodes[4]["drift"] and not graph.nodes[4]["onset"]


def assert_same_graph(a: nx.DiGraph, b: nx.DiGraph) -> None:
    assert set(a.nodes) == set(b.nodes) and set(a.edges) == set(b.edges)
    for n in a.nodes:
        assert a.nodes[n] == b.nodes[n], n
        assert all(type(v) is type(a.nodes[n][k]) for k, v in b.nodes[n].items())
    for e in a.edges:
        assert a.edges[e] == b.edges[e], e
    assert a.graph == b.graph


def test_episode_graph_round_trips_through_graphml(tmp_path):
    graph = episode_graph(five_turns(), {2: "restate_question", 4: "echo_assistant"})
    graph.graph.update(run_id="r", episode_id="e1")
    back = read_graphml(write_graphml(graph, tmp_path / "e.graphml"))
    assert all(isinstance(n, int) for n in back.nodes)
    assert_same_graph(graph, back)
    assert_same_graph(graph, read_graphml(write_graphml(back, tmp_path / "again.graphml")))


def test_transition_graph_counts_shares_and_round_trip(tmp_path):
    graph = label_transition_graph([
        ["genuine_followup", "echo_assistant", "echo_assistant"], ["genuine_followup", "restate_question"], ["echo_assistant"], [],
    ])
    assert {n: graph.nodes[n]["count"] for n in graph} == {
        START: 3, "genuine_followup": 2, "echo_assistant": 3, "restate_question": 1}
    edges = {(a, b): (d["count"], d["weight"]) for a, b, d in graph.edges(data=True)}
    assert edges == {
        (START, "genuine_followup"): (2, pytest.approx(2 / 3)), (START, "echo_assistant"): (1, pytest.approx(1 / 3)),
        ("genuine_followup", "echo_assistant"): (1, 0.5), ("genuine_followup", "restate_question"): (1, 0.5),
        ("echo_assistant", "echo_assistant"): (1, 1.0),
    }
    assert_same_graph(graph, read_graphml(write_graphml(graph, tmp_path / "t.graphml")))


def test_write_graphml_refuses_values_that_would_not_round_trip(tmp_path):
    graph = nx.DiGraph()
    graph.add_node(0, label=None)
    with pytest.raises(TypeError, match="label"):
        write_graphml(graph, tmp_path / "bad.graphml")


def test_label_sequences_keep_unscored_turns_in_place():
    turns = pd.DataFrame({"episode_id": ["b", "a", "a", "a"], "turn_index": [2, 6, 2, 4]})
    labels = pd.DataFrame({"episode_id": ["a", "a", "b"], "turn_index": [2, 4, 2], "status": ["scored", "unscored", "scored"],
                           "label": ["genuine_followup", None, "echo_assistant"]})
    assert label_sequences(labels, turns) == [["genuine_followup", "unscored", "unscored"], ["echo_assistant"]]


def assert_png(path, least: int = 10_000) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > least, (path, len(data))


def test_pictures_are_real_pngs(tmp_path):
    graph = episode_graph(five_turns(), {2: "restate_question", 4: "echo_assistant"})
    assert_png(draw_episode(graph, tmp_path / "e.png", "episode"))
    transitions = label_transition_graph([["genuine_followup", "echo_assistant"], ["restate_question", "restate_question"]])
    assert_png(draw_transitions(transitions, tmp_path / "t.png", "transitions"))
    turns = pd.DataFrame({"episode_id": ["a", "a", "b"], "turn_index": [2, 4, 2]})
    labels = turns.assign(status="scored", label=["genuine_followup", "meta_planning", "genuine_followup"])
    curve = survival_curve(drift_onsets(labels, turns))
    assert curve.survival.iloc[-1] == pytest.approx(0.0) and not math.isnan(curve.survival.iloc[1])
    assert_png(draw_survival({"model-a": curve, "model-b": curve.assign(survival=1.0)}, tmp_path / "s.png", "survival"))
