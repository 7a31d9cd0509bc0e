"""The tau2-users figure from a hand-built τ² store: one point per user model × temperature, the mean reward and the
share of episodes with a simulated-user fault (a premature stop here) worked out by hand, intervals, skips, the PNG."""

from __future__ import annotations

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from testbed.analysis.figures.data import FIGURES, figure_data  # noqa: E402
from testbed.analysis.figures.drawing import write_figures  # noqa: E402
from testbed.analysis.figures.registry import FigureInputs  # noqa: E402
from testbed.analysis.stats import wilson_interval  # noqa: E402
from testbed.analysis.tau2.figures import tau2_users  # noqa: E402
from testbed.judges.turns import label_row  # noqa: E402
from testbed.judges.verdict import Verdict  # noqa: E402
from testbed.store import EpisodeKey, EpisodeOutcome, EpisodeReward  # noqa: E402
from testbed.store.frames import episodes_df  # noqa: E402
from testbed.store.labels import JudgeIdentity, write_labels  # noqa: E402
from testbed.transcript import Message  # noqa: E402

JUDGE = JudgeIdentity("rules", "1")
TASKS = ("create_task_1", "update_task_1")
"""Mock tasks with an expected action: a user who stops before it is done stops prematurely."""
# (user model, temperature): per episode (reward, the user stopped); None reward: the episode errored.
PLAN = {
    ("calm-model", 0.0): [(1.0, False), (1.0, False), (1.0, False), (0.0, True)],
    ("calm-model", 1.0): [(1.0, False), (0.0, True), (1.0, False), (0.0, True)],
    ("terse-model", 0.0): [(1.0, False), (0.0, True), (0.0, True), (0.0, True)],
    ("terse-model", 1.0): [(0.0, True), (0.0, True), (0.0, True), (0.0, True), (None, True)],
}


def build(store, run_id="tau2-hand", plan=PLAN):
    store.begin_run(run_id, scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=17)
    labels, i = [], 0
    for (model, temperature), episodes in plan.items():
        for trial, (reward, stopped) in enumerate(episodes):
            key = EpisodeKey(f"e{i:02d}", TASKS[trial % 2], "tau2-mock", "a", "helper", "u", model, "instructed",
                             temperature, trial, "none")
            messages = [Message("system", "policy", "a", 0), Message("assistant", "Hi! How can I help you today?", "scripted", 1),
                        Message("user", "Please sort out my task.", "u", 2, {"temperature": temperature}),
                        Message("assistant", "Working on it.", "a", 3, {"temperature": 0.0})]
            if reward is None:
                store.write_episode(run_id, EpisodeOutcome(key, messages, "error", "error", "user: HTTP 500"))
            else:
                end = "user_stop" if stopped else "agent_stop"
                store.write_episode(run_id, EpisodeOutcome(key, messages, "done", end, None, reward,
                                                           reward=EpisodeReward(reward, {"DB": reward}, {})))
                labels.append(label_row(key.episode_id, 2, Verdict("genuine_followup", True, "rule")))
            i += 1
    write_labels(store, run_id, JUDGE, labels)
    store.commit()
    return run_id


def inputs(store, run_id):
    return FigureInputs(store, run_id, JUDGE, None, episodes_df(store, run_id, exact=True))


def test_one_point_per_user_model_and_temperature_with_reward_and_fault_share(store):
    frame, skipped = tau2_users(inputs(store, build(store)))
    assert skipped is None
    points = frame.set_index(["user_model", "user_temperature"])
    assert points.reward.to_dict() == {("calm-model", 0.0): 0.75, ("calm-model", 1.0): 0.5,
                                       ("terse-model", 0.0): 0.25, ("terse-model", 1.0): 0.0}
    assert points.fault_share.to_dict() == {("calm-model", 0.0): 0.25, ("calm-model", 1.0): 0.5,
                                            ("terse-model", 0.0): 0.75, ("terse-model", 1.0): 1.0}
    hot = points.loc[("terse-model", 1.0)]
    assert (hot.episodes, hot.errored_episodes, hot.checked, hot.scored) == (5, 1, 4, 4), "the errored one is left out"
    assert (hot.fault_lo, hot.fault_hi) == pytest.approx(wilson_interval(4, 4))
    assert (hot.reward_lo, hot.reward_hi) == pytest.approx(wilson_interval(0, 4)) and hot.reward_interval == "wilson"


def test_a_run_that_is_no_tau2_run_or_has_one_point_is_skipped(store):
    from test_figure_data import build as build_probe
    from test_figure_data import plan

    build_probe(store, plan())
    frame, skipped = tau2_users(inputs(store, "probe-hand"))
    assert frame.empty and "not a τ² run" in skipped
    run = build(store, "tau2-one", {("calm-model", 0.0): PLAN[("calm-model", 0.0)]})
    frame, skipped = tau2_users(inputs(store, run))
    assert frame.empty and "needs 2" in skipped and "has 1" in skipped


def test_plot_writes_the_figure_and_its_numbers(store, tmp_path):
    run = build(store)
    assert "tau2-users" in FIGURES.names()
    result = write_figures(store, run, JUDGE, tmp_path / "figures")
    png = tmp_path / "figures" / "tau2-users.png"
    assert png in result.written and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = png.with_suffix(".csv").read_text().splitlines()
    assert csv[0].startswith("user_model,user_temperature,episodes") and len(csv) == 5
    data = {d.name: d for d in figure_data(store, run, JUDGE)}["tau2-users"]
    assert data.title.startswith("τ² reward vs simulated-user fault rate — run tau2-hand")


def test_x_is_the_rules_share_corrected_with_their_measured_error_and_the_label_names_the_detector(store, tmp_path, monkeypatch):
    import json

    from testbed.analysis.judge_quality.correction import JudgeErrorRates, corrected_rate
    from testbed.analysis.tau2 import figures
    from testbed.analysis.tau2.fault_error_rates import load_detector_errors
    from testbed.analysis.tau2.figures import x_label
    from testbed.analysis.tau2.stored_faults import RULES

    run = build(store)
    monkeypatch.setattr(figures, "load_detector_errors", lambda: load_detector_errors(tmp_path / "absent.json"))
    frame, _ = tau2_users(inputs(store, run))
    assert frame.x_share.tolist() == frame.fault_share.tolist() and set(frame.x_correction) == {f"uncorrected: no measured error for {RULES}"}
    assert x_label(frame) == f"simulated-user fault share (0–1): any fault, by {RULES}, uncorrected"
    counts = {"true_positives": 9, "false_negatives": 2, "true_negatives": 10, "false_positives": 5}
    path = tmp_path / "error-rates.json"
    path.write_text(json.dumps({"detectors": {str(RULES): {"split": "heldout", "episodes": 26, "any": counts}}}))
    monkeypatch.setattr(figures, "load_detector_errors", lambda: load_detector_errors(path))
    frame, _ = tau2_users(inputs(store, run))
    calm = frame.set_index(["user_model", "user_temperature"]).loc[("calm-model", 0.0)]
    expected = corrected_rate(1, 4, JudgeErrorRates(9, 2, 10, 5, "x"))
    assert (calm.x_share, calm.x_lo, calm.x_hi) == pytest.approx((expected.corrected, expected.lo, expected.hi))
    assert (calm.x_raw, calm.x_n) == (0.25, 4) and calm.x_hi - calm.x_lo > calm.x_raw_hi - calm.x_raw_lo
    assert x_label(frame) == f"simulated-user fault share (0–1): any fault, by {RULES}, corrected"
    result = write_figures(store, run, JUDGE, tmp_path / "figures")
    assert tmp_path / "figures" / "tau2-users.png" in result.written
