"""`testbed graph`: the files it writes, drifted episodes first, and its errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from testbed.analysis.graphs import read_graphml
from testbed.cli import app
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.transcript import Message

runner = CliRunner()
QUESTION = "A farmer has 17 sheep and buys 5 more each week. How many sheep after 4 weeks?"
ANSWER = "Each week adds 5 sheep, so 4 weeks add 20. The farmer has 17 + 20 = 37 sheep after 4 weeks."


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def episode(eid: str, model: str, user_texts: list[str]) -> EpisodeOutcome:
    key = EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", model, "u", "user-model", "instructed", 0.0, 0, "none")
    messages = [Message("user", QUESTION, "dataset", 0)]
    for text in user_texts:
        messages.append(Message("assistant", ANSWER, "a", len(messages)))
        messages.append(Message("user", text, "persona", len(messages)))
    return EpisodeOutcome(key, messages, "done", "max_turns")


@pytest.fixture
def db(tmp_path) -> str:
    """Three dialogues labelled by local@test: `late` drifts at user turn 3, `early` at 1, `calm` never."""
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.begin_run("run-dialogue", scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=3)
    store.write_episode("run-dialogue", episode("late-1", "model-a", ["Why 20?", "And after 5 weeks?", ANSWER]))
    store.write_episode("run-dialogue", episode("early-1", "model-b", [ANSWER, "Thanks"]))
    store.write_episode("run-dialogue", episode("calm-1", "model-b", ["Why 20?", "And 6 weeks?"]))
    v = lambda label: (Verdict(label, label == "genuine_followup", "test"), 1)  # noqa: E731
    write_labels(store, "run-dialogue", JudgeIdentity("local", "test"), [label_row(*row) for row in [
        ("late-1", 2, *v("genuine_followup")), ("late-1", 4, *v("genuine_followup")), ("late-1", 6, *v("echo_assistant")),
        ("early-1", 2, *v("echo_assistant")), ("early-1", 4, *v("short_filler")),
        ("calm-1", 2, *v("genuine_followup")), ("calm-1", 4, *v("genuine_followup")),
    ]])
    store.close()
    return str(path)


def test_overview_writes_transitions_survival_and_drifted_episodes_first(db, tmp_path):
    out = tmp_path / "out"
    result = invoke("graph", "run-dia", "--store", db, "--out", str(out), "--episodes", "2")
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["transitions.graphml", "transitions.png", "survival.png",
                            "early-1.graphml", "early-1.png", "late-1.graphml", "late-1.png"])
    assert result.output.index("early-1.png") < result.output.index("late-1.png"), "earliest onset first"
    assert "drift: 2/3 episodes" in result.output and "local@test" in result.output
    assert all((out / n).read_bytes()[:4] == b"\x89PNG" for n in names if n.endswith(".png"))
    assert read_graphml(out / "transitions.graphml").nodes["echo_assistant"]["count"] == 2


def test_one_episode_by_prefix_into_the_default_folder(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("graph", "run-dialogue", "late", "--store", db)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "graphs" / "run-dialogue"
    assert sorted(p.name for p in folder.iterdir()) == ["late-1.graphml", "late-1.png"]
    graph = read_graphml(folder / "late-1.graphml")
    assert graph.nodes[6]["onset"] and graph.nodes[6]["label"] == "echo_assistant"
    assert graph.edges[6, 1]["kind"] == "echoes", "every answer is the same text: the earliest is its source"
    assert "drift onset at user turn 3 (turn 6)" in result.output


def test_clear_errors(db, tmp_path):
    out = str(tmp_path / "out")
    unknown = invoke("graph", "run-dialogue", "nope", "--store", db, "--out", out)
    assert unknown.exit_code == 2 and "episode 'nope' is not in run run-dialogue" in unknown.output
    no_labels = invoke("graph", "run-dialogue", "--judge", "failure-modes", "--store", db, "--out", out)
    assert no_labels.exit_code == 2 and "testbed judge run-dialogue --judge failure-modes" in no_labels.output
    no_run = invoke("graph", "missing-run", "--store", db, "--out", out)
    assert no_run.exit_code == 2 and "not in the store" in no_run.output
    assert "Traceback" not in unknown.output + no_labels.output + no_run.output
