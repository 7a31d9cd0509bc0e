"""Drift onset, Kaplan–Meier in-role survival and the drift summary, on hand-built dialogues."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from testbed.analysis.drift import drift_onsets, drift_summary, run_drift, summary_line, survival_curve
from testbed.analysis.stats import wilson_interval
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.transcript import Message

WHO = JudgeIdentity("local", "test")


def frames(episodes: dict[str, list[tuple[str, str | None]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Labels and turns frames; each episode lists (status, label) for user turns 2, 4, 6, … ('-' = never judged)."""
    labels, turns = [], []
    for eid, verdicts in episodes.items():
        for i, (status, label) in enumerate(verdicts):
            turns.append((eid, 2 + 2 * i))
            if status != "-":
                labels.append((eid, 2 + 2 * i, status, label))
    return (pd.DataFrame(labels, columns=["episode_id", "turn_index", "status", "label"]),
            pd.DataFrame(turns, columns=["episode_id", "turn_index"]))


def test_onset_is_the_ordinal_of_the_first_drift_label():
    labels, turns = frames({
        "a": [("scored", "genuine_followup"), ("scored", "echo_assistant"), ("scored", "meta_planning"), ("scored", "genuine_followup")],
        "b": [("scored", "genuine_followup"), ("scored", "restate_question")],
        "c": [("scored", "meta_planning")],
    })
    onsets = drift_onsets(labels, turns).set_index("episode_id")
    assert onsets.loc["a", ["user_turns", "onset", "onset_turn_index", "drifted", "observed_turns"]].tolist() == [4, 2.0, 4.0, True, 2]
    assert onsets.loc["c", ["onset", "onset_turn_index", "drifted"]].tolist() == [1.0, 2.0, True]
    assert math.isnan(onsets.loc["b", "onset"]) and math.isnan(onsets.loc["b", "onset_turn_index"])
    assert not onsets.loc["b", "drifted"] and onsets.loc["b", "observed_turns"] == 2


def test_unscored_turns_neither_drift_nor_count_as_in_role():
    labels, turns = frames({
        "late_unknown": [("scored", "genuine_followup"), ("unscored", None), ("-", None)],
        "unknown_then_drift": [("unscored", None), ("scored", "echo_assistant")],
        "nothing_known": [("unscored", None), ("-", None)],
        "unscored_drift_label": [("unscored", "echo_assistant"), ("scored", "genuine_followup")],
    })
    onsets = drift_onsets(labels, turns).set_index("episode_id")
    late = onsets.loc["late_unknown"]
    assert (late.user_turns, late.scored_turns, late.observed_turns, late.drifted) == (3, 1, 1, False)
    assert onsets.loc["unknown_then_drift", ["onset", "observed_turns", "scored_turns"]].tolist() == [2.0, 2, 1]
    assert onsets.loc["nothing_known", ["observed_turns", "scored_turns", "drifted"]].tolist() == [0, 0, False]
    assert not onsets.loc["unscored_drift_label", "drifted"]
    curve = survival_curve(onsets.reset_index()).set_index("k")
    assert curve.loc[2, "at_risk"] == 2, "only episodes with a label at or after the 2nd turn are at risk there"
    summary = drift_summary(onsets.reset_index())
    assert (summary["episodes"], summary["evidence"], summary["drifted"]) == (4, 3, 1)


def test_survival_curve_censors_episodes_that_end_in_role():
    onsets = pd.DataFrame({
        "episode_id": list("abcde"),
        "user_turns": [4, 2, 4, 3, 1],
        "onset": [2, math.nan, math.nan, 3, 1],
        "drifted": [True, False, False, True, True],
    })
    onsets["observed_turns"] = [2, 2, 4, 3, 1]
    curve = survival_curve(onsets)
    assert curve.k.tolist() == [0, 1, 2, 3, 4]
    assert curve.at_risk.tolist() == [5, 5, 4, 2, 1]
    assert curve.drifted_at_k.tolist() == [0, 1, 1, 1, 0]
    assert curve.censored_at_k.tolist() == [0, 0, 1, 0, 1]
    assert curve.survival.tolist() == pytest.approx([1.0, 0.8, 0.6, 0.3, 0.3])
    without_observed = survival_curve(onsets.drop(columns="observed_turns"), max_k=6)
    assert without_observed.k.max() == 6 and without_observed.survival.iloc[-1] == pytest.approx(0.3)
    assert without_observed.at_risk.tolist() == [5, 5, 4, 2, 1, 0, 0], "a drifted episode leaves the risk set at its onset"


def test_summary_share_interval_and_onsets():
    labels, turns = frames({
        "a": [("scored", "echo_assistant")],
        "b": [("scored", "genuine_followup"), ("scored", "meta_planning")],
        "c": [("scored", "genuine_followup"), ("scored", "echo_assistant")],
        "d": [("scored", "genuine_followup")],
    })
    summary = drift_summary(drift_onsets(labels, turns))
    assert (summary["episodes"], summary["drifted"], summary["share_drifted"]) == (4, 3, 0.75)
    assert (summary["share_lo"], summary["share_hi"]) == pytest.approx(wilson_interval(3, 4))
    assert summary["onset_counts"] == {1: 1, 2: 2} and summary["median_onset"] == 2.0
    assert summary["km_median_onset"] == 2.0
    assert summary_line(summary).startswith("drift: 3/4 episodes (75.0%")
    empty = drift_summary(drift_onsets(labels.iloc[:0], turns.iloc[:0]))
    assert empty["episodes"] == 0 and math.isnan(empty["share_drifted"]) and math.isnan(empty["median_onset"])


def dialogue(eid: str, model: str, user_turns: int) -> EpisodeOutcome:
    key = EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", model, "u", "user-model", "instructed", 0.7, 0, "none")
    messages = [Message("system", "Be brief.", "system", 0), Message("user", "What is 6 * 7?", "dataset", 1)]
    for i in range(user_turns):
        messages.append(Message("assistant", f"Answer number {i}: 42.", "a", len(messages)))
        messages.append(Message("user", f"Follow-up number {i}?", "persona", len(messages)))
    return EpisodeOutcome(key, messages, "done", "max_turns")


def test_run_drift_reads_turns_labels_and_conditions_from_the_store(store):
    store.begin_run("r", scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=3)
    for eid, model, n in [("e1", "model-a", 3), ("e2", "model-b", 2), ("e3", "model-b", 2)]:
        store.write_episode("r", dialogue(eid, model, n))
    ok = lambda label: Verdict(label, label == "genuine_followup", "test")  # noqa: E731
    write_labels(store, "r", WHO, [label_row(*row) for row in [
        ("e1", 3, ok("genuine_followup"), 1), ("e1", 5, ok("genuine_followup"), 1), ("e1", 7, ok("meta_planning"), 1),
        ("e2", 3, Verdict(None, None, "unparseable", raw="??"), 2), ("e2", 5, ok("echo_assistant"), 1),
        ("e3", 3, ok("echo_assistant"), 1), ("e3", 3, ok("genuine_followup"), 1),
    ]])
    frame = run_drift(store, "r", WHO).set_index("episode_id")
    assert frame.loc["e1", ["user_turns", "onset", "onset_turn_index", "assistant_model"]].tolist() == [3, 3.0, 7.0, "model-a"]
    assert frame.loc["e2", ["onset", "scored_turns", "temperature", "user_mode"]].tolist() == [2.0, 1, 0.7, "instructed"]
    assert not frame.loc["e3", "drifted"], "the latest verdict on a turn wins"
    assert frame.loc["e3", "observed_turns"] == 1
