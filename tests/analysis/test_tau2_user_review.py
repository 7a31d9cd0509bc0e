"""The τ² report's whole-conversation reviewer columns and the rules' agreement with it, on the scripted faulty run with
turn reviews written by hand (known answers): the rules flag an invented code on the stopping user's turn 2 and a
premature stop on its turn 4; the other episode (user turns 2 and 6) has no fault."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from typer.testing import CliRunner  # noqa: E402

from tau2_faulty_run import STOPPED, faulty_run  # noqa: E402
from testbed.analysis.reports.render import display_rows  # noqa: E402
from testbed.analysis.stats import wilson_interval  # noqa: E402
from testbed.analysis.tau2.report import tau2_report  # noqa: E402
from testbed.analysis.tau2.stored_faults import RULES  # noqa: E402
from testbed.analysis.tau2.user_review import kappa  # noqa: E402
from testbed.cli import app  # noqa: E402
from testbed.store.records import JudgeIdentity  # noqa: E402
from testbed.store.run_frames import RunFrames  # noqa: E402
from testbed.store.turn_reviews import TurnReviewRow  # noqa: E402

WHO = JudgeIdentity("user-review", "user-review-1", "rev-model")


@pytest.fixture
async def run(tmp_path, store):
    run_id, _ = await faulty_run(tmp_path, store)
    ids = {e.key.item_id: e.key.episode_id for e in store.episodes(run_id)}
    stopped, done = ids[STOPPED], next(v for k, v in ids.items() if k != STOPPED)
    assert [m.turn_index for m in store.messages(run_id, stopped) if m.role == "user"] == [2, 4]
    assert [m.turn_index for m in store.messages(run_id, done) if m.role == "user"] == [2, 6]
    return store, run_id, stopped, done


def reviewed(store, run_id, stopped, done, *, stopped_unscored: bool = False) -> dict:
    """The reviewer tags the invented code (hindering), misses the premature stop, and tags the clean episode's two user
    turns (revealed early, minor; premature termination that helped)."""
    if stopped_unscored:
        store.write_turn_reviews(run_id, WHO, [TurnReviewRow(stopped, t, (), None, "unparsable", False, "?", 3) for t in (2, 4)])
    else:
        store.write_turn_reviews(run_id, WHO, [TurnReviewRow(stopped, 2, ("hallucination",), "critical_hindered", "made up"),
                                               TurnReviewRow(stopped, 4)])
    store.write_turn_reviews(run_id, WHO, [TurnReviewRow(done, 2, ("revealed_info_early",), "minor", "early"),
                                           TurnReviewRow(done, 6, ("premature_termination",), "critical_helped", "stopped")])
    (row,) = tau2_report(RunFrames(store, run_id, None)).to_dict("records")
    return row


def cells(row: dict, tag: str) -> tuple:
    return tuple(row[f"agree_{tag}_{c}"] for c in ("both", "rules_only", "reviewer_only", "neither", "turns"))


async def test_the_reviewers_shares_and_its_agreement_with_the_rules_per_tag(run):
    store, run_id, stopped, done = run
    row = reviewed(store, run_id, stopped, done)
    assert (row["review_error"], row["review_hindered"], row["review_helped"]) == (1.0, 0.5, 0.5)
    assert (row["review_hindered_lo"], row["review_hindered_hi"]) == pytest.approx(wilson_interval(1, 2))
    assert (row["review_episodes"], row["review_unscored"], row["review_source"]) == (2, 0, str(WHO))
    assert row["fault_source"] == str(RULES)
    assert cells(row, "hallucination") == (1, 0, 0, 3, 4) and row["agree_hallucination_kappa"] == 1.0
    assert cells(row, "premature_termination") == (0, 1, 1, 2, 4)
    assert row["agree_premature_termination_kappa"] == pytest.approx(-1 / 3)
    assert row["agree_premature_termination_agreement"] == 0.5
    assert cells(row, "revealed_info_early") == (0, 0, 1, 3, 4) and row["agree_revealed_info_early_kappa"] == 0.0
    assert cells(row, "any") == (1, 1, 2, 0, 4) and row["agree_any_kappa"] == pytest.approx(-0.5)
    assert math.isnan(row["agree_guideline_violation_turns"]), "without a judge no rule flags role drift"
    header, shown = display_rows(tau2_report(RunFrames(store, run_id, None)))
    at = header.index("episodes with user error (95% CI)")
    assert header[at:at + 6] == ["episodes with user error (95% CI)", "with critical_hindered (95% CI)",
                                 "with critical_helped (95% CI)", "episodes reviewed", "episode reviews unscored", "reviewed by"]
    assert shown[0][at + 5] == str(WHO) and shown[0][header.index("user faults found by")] == str(RULES)
    assert shown[0][header.index("rules vs reviewer: premature_termination")] == (
        "κ -0.33, 50% agree (both 0, rules 1, reviewer 1, neither 2)")


async def test_an_unscored_episode_is_counted_apart_and_left_out_of_the_agreement(run):
    store, run_id, stopped, done = run
    row = reviewed(store, run_id, stopped, done, stopped_unscored=True)
    assert (row["review_episodes"], row["review_unscored"], row["review_error"], row["review_hindered"]) == (1, 1, 1.0, 0.0)
    assert cells(row, "hallucination") == (0, 0, 0, 2, 2) and math.isnan(row["agree_hallucination_kappa"])
    assert row["agree_hallucination_agreement"] == 1.0 and cells(row, "premature_termination") == (0, 0, 1, 1, 2)


async def test_without_a_reviewer_the_report_has_no_reviewer_columns_and_json_carries_them_with_one(run):
    store, run_id, stopped, done = run
    before = tau2_report(RunFrames(store, run_id, None))
    assert "review_error" not in before and "agree_any_kappa" not in before and "fault_source" in before
    reviewed(store, run_id, stopped, done)
    out = CliRunner().invoke(app, ["report", run_id, "--store", str(store.path), "-f", "json", "--judge", "none"])
    (record,) = json.loads(out.stdout)
    assert record["review_source"] == str(WHO) and record["agree_hallucination_both"] == 1
    assert record["review_error"] == 1.0 and record["fault_source"] == str(RULES)


def test_kappa_is_scikit_learns_and_undefined_when_neither_rater_varies():
    assert kappa([True, False, False, True], [True, False, True, True]) == 0.5
    assert math.isnan(kappa([False, False], [False, False])) and math.isnan(kappa([], []))
    assert kappa([False, False], [False, True]) == 0.0
