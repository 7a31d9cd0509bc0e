"""The headline shares: the fault detectors' measured error read from the gold set's file, and the failed episodes'
hindered share and the successful episodes' helped share, raw and corrected, on the scripted faulty run (the stopping
user's episode fails with an invented code the reviewer calls critical_hindered; the other succeeds with a
critical_helped stop)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from testbed.analysis.judge_quality.correction import BadErrorRates, JudgeErrorRates, corrected_rate
from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.fault_error_rates import detector_error, load_detector_errors
from testbed.analysis.tau2.headline import share

REVIEWER = "user-review@user-review-1:rev-model"
RULES_ID = "tau2-user-rules@2"
COUNTS = {"true_positives": 9, "false_negatives": 2, "true_negatives": 10, "false_positives": 5}


def error_file(tmp_path, detectors) -> str:
    path = tmp_path / "error-rates.json"
    path.write_text(json.dumps({"detectors": detectors}))
    return path


def test_a_valid_file_gives_each_detectors_counts_per_measure(tmp_path):
    path = error_file(tmp_path, {REVIEWER: {"split": "heldout", "episodes": 26, "any": COUNTS, "critical_hindered": COUNTS},
                                 RULES_ID: {"split": "heldout", "episodes": 26, "any": COUNTS}})
    errors = load_detector_errors(path)
    rates = detector_error(errors, REVIEWER, "critical_hindered")
    assert (rates.true_positives, rates.false_negatives, rates.true_negatives, rates.false_positives) == (9, 2, 10, 5)
    assert "heldout" in rates.source and "26 episodes" in rates.source
    assert detector_error(errors, REVIEWER, "critical_helped") is None
    assert detector_error(errors, "someone@1", "any") is None


def test_an_absent_file_is_no_measured_error(tmp_path):
    assert load_detector_errors(tmp_path / "missing.json") == {}


@pytest.mark.parametrize("detectors, field", [
    ({REVIEWER: {"any": {**COUNTS, "false_positives": "five"}}}, f"detectors.{REVIEWER}.any.false_positives"),
    ({REVIEWER: {"any": {k: v for k, v in COUNTS.items() if k != "true_positives"}}}, f"detectors.{REVIEWER}.any.true_positives"),
    ({REVIEWER: [1, 2]}, f"detectors.{REVIEWER}"),
])
def test_a_malformed_file_names_the_file_and_the_field(tmp_path, detectors, field):
    path = error_file(tmp_path, detectors)
    with pytest.raises(BadErrorRates) as caught:
        load_detector_errors(path)
    assert caught.value.field == field and str(path) in str(caught.value) and field in str(caught.value)


def test_a_file_without_detectors_names_the_field(tmp_path):
    path = tmp_path / "error-rates.json"
    path.write_text(json.dumps({"rules": {}}))
    with pytest.raises(BadErrorRates, match="detectors"):
        load_detector_errors(path)


def test_a_share_is_raw_with_wilson_and_corrected_with_the_measured_error_in_a_wider_interval():
    rates = JudgeErrorRates(9, 2, 10, 5, "error-rates.json (heldout, 26 episodes)")
    out = share(3, 10, REVIEWER, rates, "critical_hindered", "failed_hindered_review")
    assert out["failed_hindered_review"] == 0.3
    assert (out["failed_hindered_review_lo"], out["failed_hindered_review_hi"]) == pytest.approx(wilson_interval(3, 10))
    expected = corrected_rate(3, 10, rates)
    assert (out["failed_hindered_review_corrected"], out["failed_hindered_review_corrected_lo"],
            out["failed_hindered_review_corrected_hi"]) == pytest.approx((expected.corrected, expected.lo, expected.hi))
    assert (out["failed_hindered_review_corrected_hi"] - out["failed_hindered_review_corrected_lo"]
            > out["failed_hindered_review_hi"] - out["failed_hindered_review_lo"])
    assert out["failed_hindered_review_detector"] == REVIEWER
    assert out["failed_hindered_review_correction"] == "corrected with error-rates.json (heldout, 26 episodes)"


def test_a_detector_without_measured_error_gets_raw_figures_marked_uncorrected():
    out = share(3, 10, RULES_ID, None, "any", "rules_any")
    assert out["rules_any"] == 0.3 and math.isnan(out["rules_any_corrected"])
    assert out["rules_any_correction"] == f"uncorrected: no measured error for {RULES_ID}"


tau2 = pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from tau2_faulty_run import STOPPED, faulty_run  # noqa: E402
from testbed.analysis.tau2 import report as tau2_report_module  # noqa: E402
from testbed.store.records import JudgeIdentity  # noqa: E402
from testbed.store.run_frames import RunFrames  # noqa: E402
from testbed.store.turn_reviews import TurnReviewRow  # noqa: E402

WHO = JudgeIdentity("user-review", "user-review-1", "rev-model")


async def test_the_report_gives_the_headline_per_condition_raw_and_corrected(tmp_path, store, monkeypatch):
    run_id, _ = await faulty_run(tmp_path, store)
    ids = {e.key.item_id: e.key.episode_id for e in store.episodes(run_id)}
    stopped, done = ids[STOPPED], next(v for k, v in ids.items() if k != STOPPED)
    store.write_turn_reviews(run_id, WHO, [TurnReviewRow(stopped, 2, ("hallucination",), "critical_hindered", "made up"),
                                           TurnReviewRow(stopped, 4)])
    store.write_turn_reviews(run_id, WHO, [TurnReviewRow(done, 2, ("revealed_info_early",), "minor", "early"),
                                           TurnReviewRow(done, 6, ("premature_termination",), "critical_helped", "stopped")])
    path = error_file(tmp_path, {str(WHO): {"split": "heldout", "episodes": 26, "critical_hindered": COUNTS}})
    monkeypatch.setattr(tau2_report_module, "load_detector_errors", lambda: load_detector_errors(path))
    (row,) = tau2_report_module.tau2_report(RunFrames(store, run_id, None)).to_dict("records")
    assert (row["failed_hindered_review"], row["failed_hindered_review_n"]) == (1.0, 1)
    assert (row["success_helped_review"], row["success_helped_review_n"]) == (1.0, 1)
    assert (row["rules_any"], row["rules_any_n"]) == (0.5, 2)
    expected = corrected_rate(1, 1, JudgeErrorRates(9, 2, 10, 5, "x"))
    assert row["failed_hindered_review_corrected"] == pytest.approx(expected.corrected)
    assert row["failed_hindered_review_detector"] == str(WHO) and row["failed_hindered_review_correction"].startswith("corrected")
    assert row["success_helped_review_correction"] == f"uncorrected: no measured error for {WHO}"
    assert row["rules_any_correction"] == f"uncorrected: no measured error for {RULES_ID}"
    assert row["headline_review_unscored"] == 0


async def test_with_only_the_flagged_fault_review_the_failed_share_is_its_hindered_verdicts_labelled_so(tmp_path, store):
    from testbed.analysis.tau2.faults import flagged_faults
    from testbed.store.fault_reviews import FaultReviewRow

    run_id, _ = await faulty_run(tmp_path, store)
    stopped = next(e.key.episode_id for e in store.episodes(run_id) if e.key.item_id == STOPPED)
    rows = [FaultReviewRow(stopped, f.turn_index, f.kind, f.evidence, "hindered" if f.kind == "invented_fact" else "harmless")
            for f in flagged_faults(store, run_id)
            if f.episode_id == stopped]
    assert rows
    old = JudgeIdentity("fault-review", "fault-review-1", "rev-model")
    store.write_fault_reviews(run_id, old, rows)
    (row,) = tau2_report_module.tau2_report(RunFrames(store, run_id, None)).to_dict("records")
    assert (row["failed_hindered_review"], row["failed_hindered_review_n"]) == (1.0, 1)
    assert row["failed_hindered_review_detector"] == f"{old} (flagged-fault review: hindered)"
    assert row["failed_hindered_review_correction"].startswith("uncorrected: no measured error")
    assert "success_helped_review" not in row


def test_the_text_report_shows_each_headline_share_raw_then_corrected_with_its_detector():
    from testbed.analysis.tau2.report_columns import HEADLINE_DISPLAY

    row = pd.Series({**share(3, 10, RULES_ID, JudgeErrorRates(9, 2, 10, 5, "x"), "any", "rules_any"),
                     **share(1, 4, str(WHO), None, "critical_helped", "success_helped_review")})
    shown = {header: show(row) for header, column, show in HEADLINE_DISPLAY if column in row}
    rules = shown["episodes with any rule fault"]
    assert rules.startswith("30.0% (") and "→" in rules and "corrected, n = 10" in rules and rules.endswith(f"by {RULES_ID}")
    helped = shown["successful episodes the user made too easy (critical_helped)"]
    assert "uncorrected, n = 4" in helped and "→" not in helped and helped.endswith(f"by {WHO}")
