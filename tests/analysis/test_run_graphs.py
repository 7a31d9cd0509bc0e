"""`testbed.analysis.figures.run_graphs`: a judged run's graph files and summary, without the command line."""

from __future__ import annotations

import pytest

from testbed.analysis.graphs import read_graphml
from testbed.analysis.figures.run_graphs import UnknownEpisode, draw_run_graphs, find_episode, pick_episodes
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.transcript import Message

WHO = JudgeIdentity("local", "test")
ANSWER = "Each week adds 5 sheep, so 4 weeks add 20. The farmer has 17 + 20 = 37 sheep after 4 weeks."


def episode(eid: str, user_texts: list[str]) -> EpisodeOutcome:
    key = EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", "model-a", "u", "user-model", "instructed", 0.0, 0, "none")
    messages = [Message("user", "17 sheep and 5 more each week: how many after 4 weeks?", "dataset", 0)]
    for text in user_texts:
        messages.append(Message("assistant", ANSWER, "a", len(messages)))
        messages.append(Message("user", text, "persona", len(messages)))
    return EpisodeOutcome(key, messages, "done", "max_turns")


@pytest.fixture
def db(tmp_path) -> Store:
    """Two dialogues labelled by local@test: `drifts` echoes the answer at its second user turn, `calm` never drifts."""
    store = Store(tmp_path / "s.sqlite")
    store.begin_run("run-g", scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=2)
    store.write_episode("run-g", episode("drifts-1", ["Why 20?", ANSWER]))
    store.write_episode("run-g", episode("calm-1", ["Why 20?", "And 6 weeks?"]))
    v = lambda label: (Verdict(label, label == "genuine_followup", "test"), 1)  # noqa: E731
    write_labels(store, "run-g", WHO, [label_row(*row) for row in [
        ("drifts-1", 2, *v("genuine_followup")), ("drifts-1", 4, *v("echo_assistant")),
        ("calm-1", 2, *v("genuine_followup")), ("calm-1", 4, *v("genuine_followup"))]])
    yield store
    store.close()


def test_an_episode_is_named_exactly_or_by_a_unique_prefix():
    known = ["ab-1", "ab-2", "cd-1"]
    assert find_episode(known, "cd", "r") == "cd-1" and find_episode(known, "ab-1", "r") == "ab-1"
    with pytest.raises(UnknownEpisode, match="'ab' is ambiguous in run r: ab-1, ab-2"):
        find_episode(known, "ab", "r")
    with pytest.raises(UnknownEpisode, match=r"'zz' is not in run r \(episodes: ab-1, ab-2, cd-1\)"):
        find_episode(known, "zz", "r")


def test_the_overview_writes_its_files_drifted_episodes_first(db, tmp_path):
    drawn = draw_run_graphs(db, "run-g", WHO, tmp_path / "out", episodes=1)
    assert [p.name for p in drawn.paths] == ["transitions.graphml", "transitions.png", "survival.png",
                                             "drifts-1.graphml", "drifts-1.png"]
    assert all(p.exists() for p in drawn.paths) and drawn.summary.startswith("drift: 1/2 episodes")
    assert read_graphml(drawn.paths[0]).graph["judge"] == str(WHO)


def test_one_episode_by_prefix(db, tmp_path):
    drawn = draw_run_graphs(db, "run-g", WHO, tmp_path, episode="calm")
    assert [p.name for p in drawn.paths] == ["calm-1.graphml", "calm-1.png"]
    assert drawn.summary == "episode calm-1: 2 user turns, 2 labelled, no drift"
    with pytest.raises(UnknownEpisode):
        draw_run_graphs(db, "run-g", WHO, tmp_path, episode="nope")


def test_episodes_are_picked_by_onset_then_id():
    import pandas as pd

    onsets = pd.DataFrame({"episode_id": ["c", "b", "a", "d"], "onset": [None, 3.0, 3.0, 1.0]})
    assert pick_episodes(onsets, 3) == ["d", "a", "b"]
