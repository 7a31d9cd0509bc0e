"""Conversation graphs of an episode with tool traffic: tool messages are nodes on the reply path with their own row,
never user turns and never what a user turn copies; the drift numbers count spoken user turns only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from testbed.analysis.drift import drift_onsets, turns_frame
from testbed.analysis.frames import judge_labels
from testbed.analysis.graphs import episode_graph, episode_messages, message_dict, read_graphml, write_graphml
from testbed.analysis.figures.run_graphs import draw_run_graphs
from testbed.store import Store
from tool_episode import ANSWER, EPISODE, GENERATED, JUDGE, LONG_RESULT, MESSAGES, RUN, build_tool_store


@pytest.fixture
def store(tmp_path):
    s = Store(build_tool_store(tmp_path))
    yield s
    s.close()


def test_tool_messages_are_nodes_but_never_user_turns(store, tmp_path):
    labels = {2: "genuine_followup", 7: "echo_assistant", 9: "echo_assistant"}
    graph = episode_graph(episode_messages(store, RUN, EPISODE), labels)
    assert {n: d["ordinal"] for n, d in graph.nodes(data=True) if d["ordinal"]} == {2: 1, 9: 2}
    assert graph.nodes[7]["label"] == "" and graph.nodes[7]["tools"] == "toggle_airplane_mode"
    node = graph.nodes[4]
    assert (node["role"], node["tools"], node["tool_error"]) == ("tool", "get_customer_by_phone", False)
    assert graph.nodes[5]["tool_error"] is True and graph.nodes[9]["onset"]
    assert [b for _, b, d in graph.out_edges(3, data=True) if d["kind"] == "reply"] == [4]
    again = read_graphml(write_graphml(graph, tmp_path / "g.graphml"))
    assert again.nodes[5]["tool_error"] is True and again.nodes[4]["role"] == "tool"


def test_a_user_turn_copying_a_tool_result_has_no_source_edge_to_it():
    copying = [*MESSAGES[:9], replace(MESSAGES[9], content=LONG_RESULT), MESSAGES[10]]
    graph = episode_graph([message_dict(m) for m in copying], {})
    assert [(a, b) for a, b, d in graph.edges(data=True) if d["kind"] != "reply"] == []
    echoing = [*MESSAGES[:9], replace(MESSAGES[9], content=ANSWER), MESSAGES[10]]
    graph = episode_graph([message_dict(m) for m in echoing], {})
    assert [(a, b, d["kind"]) for a, b, d in graph.edges(data=True) if d["kind"] != "reply"] == [(9, 6, "echoes")]


def test_drift_counts_spoken_user_turns_and_the_run_graphs_draw(store, tmp_path):
    onsets = drift_onsets(judge_labels(store, RUN, JUDGE), turns_frame(store, RUN))
    assert list(turns_frame(store, RUN).turn_index) == list(GENERATED)
    assert int(onsets.user_turns.iloc[0]) == 2 and not onsets.drifted.iloc[0]
    drawn = draw_run_graphs(store, RUN, JUDGE, tmp_path / "graphs", episode=EPISODE)
    assert {p.suffix for p in drawn.paths} == {".graphml", ".png"} and all(p.stat().st_size for p in drawn.paths)
    assert "2 user turns" in drawn.summary


def test_a_tool_name_that_reads_as_math_is_drawn_as_text(tmp_path):
    from testbed.analysis.figures.graph_drawing import draw_episode
    from testbed.transcript import ToolCall, ToolResult

    odd = r"a$\frac{$b"
    messages = [*MESSAGES[:3], replace(MESSAGES[3], tool_calls=(ToolCall("call-1", odd, "{}"),)),
                replace(MESSAGES[4], tool_result=ToolResult("call-1", odd, error=True)), *MESSAGES[6:]]
    path = draw_episode(episode_graph([message_dict(m) for m in messages], {}), tmp_path / "odd.png", "odd")
    assert path.stat().st_size
