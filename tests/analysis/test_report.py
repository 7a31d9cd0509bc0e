"""Report numbers from a hand-built store: rates, exclusions and intervals are what they claim."""

from __future__ import annotations

import math

import pytest

from testbed.analysis.frames import normalise
from testbed.analysis.reports.probe import report_frame
from testbed.analysis.stats import wilson_interval
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.transcript import Message, Usage


def episode(i: int, user_turn: str | None, *, mode="raw", score=1.0, status="done", reason=None) -> EpisodeOutcome:
    key = EpisodeKey(f"e{i}", f"item{i}", "gsm8k", "a", "model-a", "u", "model-u", mode, 0.0, 0, "none")
    msgs = [Message("user", "What is 2 + 2?", "dataset", 0), Message("assistant", "4", "a", 1)]
    if user_turn is not None:
        msgs.append(Message("user", user_turn, "u", 2, usage=Usage(5, 3, 0.1)))
    return EpisodeOutcome(key, msgs, status, "max_turns" if status == "done" else "error", reason, score, Usage(5, 3, 0.1))


@pytest.fixture
def filled(store):
    store.begin_run("r", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=5)
    for i, (turn, score) in enumerate([("what is 2 + 2?", 1.0), ("Why four?", 0.0), ("Can you explain step two please", None)]):
        store.write_episode("r", episode(i, turn, score=score))
    store.write_episode("r", episode(3, None, score=None, status="error", reason="user: HTTP 500"))
    store.write_episode("r", episode(4, "Thanks", mode="instructed", score=1.0))
    return store


def test_rates_exclude_errors_and_unscorable(filled):
    report = report_frame(filled, "r").set_index("user_mode")
    raw = report.loc["raw"]
    assert (raw.episodes, raw.errors, raw.scored) == (4, 1, 2)
    assert raw.accuracy == pytest.approx(0.5)
    assert raw.identical_to_question == pytest.approx(1 / 3)
    assert raw.user_turn_words == pytest.approx((5 + 2 + 6) / 3)
    assert (raw.accuracy_lo, raw.accuracy_hi) == pytest.approx(wilson_interval(1, 2))
    assert report.loc["instructed"].identical_to_question == 0.0
    assert filled.error_reasons("r") == [("user: HTTP 500", 1)]


def test_empty_run_gives_empty_report(store):
    store.begin_run("r", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=0)
    assert report_frame(store, "r").empty


def test_wilson_interval_known_values():
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(20, 20)[1] == 1.0
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_normalise_ignores_case_space_and_edge_punctuation():
    assert normalise("  What is 2 + 2? ") == normalise("what is 2 +  2")
    assert normalise("What is 2 + 3?") != normalise("What is 2 + 2?")


def test_empty_user_turns_are_counted_not_dropped(store):
    store.begin_run("r", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=3)
    for i, turn in enumerate(["", "  \n", "Why four?"]):
        store.write_episode("r", episode(i, turn))
    report = report_frame(store, "r")
    assert int(report.empty_user_turns.sum()) == 2
    assert int(report.episodes.sum()) == 3 and int(report.errors.sum()) == 0


def test_the_empty_turns_column_shows_only_when_there_are_some(store):
    from testbed.analysis.reports.render import display_rows

    store.begin_run("r", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=2)
    store.write_episode("r", episode(0, "Why four?"))
    assert "empty turns" not in display_rows(report_frame(store, "r"))[0]
    store.write_episode("r", episode(1, ""))
    header, rows = display_rows(report_frame(store, "r"))
    assert rows[0][header.index("empty turns")] == "1"
