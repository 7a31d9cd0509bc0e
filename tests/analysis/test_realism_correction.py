"""The realism table's follow-up rates corrected for the judge's measured errors, as the run report corrects its own."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from synthetic_chats import chats_file, conversation, real_context_probe  # noqa: F401
from testbed.analysis.judge_quality.correction import JudgeErrorRates, corrected_rate, reviewed_rate
from testbed.analysis.realism.followup_correction import FollowupCorrection
from testbed.analysis.realism.render import CORRECTED_HEADER, as_markdown, header, realism_rows
from testbed.analysis.realism.runs import RunRealism, decided_by_review, run_realism
from testbed.analysis.realism.table import (
    HUMAN_BASELINE_COLUMNS,
    REALISM_COLUMNS,
    human_baseline,
    realism_table,
    with_correction_columns,
)
from testbed.cli import app

RATES = JudgeErrorRates(true_positives=30, false_negatives=30, true_negatives=180, false_positives=20, source="gold-dev")
"""A judge that finds half the follow-ups (se 0.5) and calls 10 % of the rest follow-ups (sp 0.9)."""


def turns(contexts: int = 40) -> pd.DataFrame:
    """One real and two simulated turns per context: real follow-ups in every 4th context, simulated in every 2nd."""
    rows = []
    for k in range(contexts):
        shared = {"context_id": f"c{k:03d}", "answer": "an answer", "question": "a question", "label": "other"}
        rows.append({**shared, "source": "real", "user_model": "human", "user_mode": "human", "temperature": 0.0,
                     "text": f"real turn {k}", "followup": k % 4 == 0})
        for j in range(2):
            rows.append({**shared, "source": "simulated", "user_model": "sim", "user_mode": "plain", "temperature": 0.7,
                         "text": f"simulated turn {k} {j}", "followup": k % 2 == 0})
    return pd.DataFrame(rows)


def test_the_table_without_error_rates_keeps_its_columns():
    assert list(realism_table(turns(), resamples=20, permutations=5).columns) == REALISM_COLUMNS


def test_each_sides_rate_is_corrected_with_the_judges_error_rates_beside_its_raw_rate():
    table = realism_table(turns(), resamples=20, permutations=5, correction=FollowupCorrection(RATES, RATES.source))
    assert list(table.columns) == with_correction_columns(REALISM_COLUMNS)
    columns = list(table.columns)
    assert columns.index("followup_sim_corrected") == columns.index("followup_sim_hi") + 1
    row = table.iloc[0]
    sim, real = corrected_rate(40, 80, RATES), corrected_rate(10, 40, RATES)
    assert row["followup_sim"] == 0.5 and row["followup_real"] == 0.25
    assert (row["followup_sim_corrected"], row["followup_sim_corrected_lo"], row["followup_sim_corrected_hi"]) == (
        pytest.approx(sim.corrected), pytest.approx(sim.lo), pytest.approx(sim.hi))
    assert row["followup_real_corrected"] == pytest.approx(real.corrected)
    assert row["followup_sim_corrected"] > row["followup_sim"], "a judge that misses half the follow-ups is corrected upward"
    assert row["corrected_with"] == "gold-dev"


def test_turns_a_reviewer_decided_are_taken_as_right_and_the_rest_corrected():
    frame = turns().assign(reviewed=lambda f: f.context_id.str[-1].isin(["0", "1"]))
    correction = FollowupCorrection(RATES, "fast part: gold-dev; reviewed part: a person, taken as right")
    row = realism_table(frame, resamples=20, permutations=5, correction=correction).iloc[0]
    sim = frame[(frame.source == "simulated")]
    review = sim.reviewed
    expected = reviewed_rate((int(sim.followup[~review].sum()), int((~review).sum()), RATES),
                             (int(sim.followup[review].sum()), int(review.sum()), None))
    assert row["followup_sim_corrected"] == pytest.approx(expected.corrected)
    assert row["followup_sim_corrected"] != pytest.approx(corrected_rate(40, 80, RATES).corrected)
    assert row["corrected_with"].startswith("fast part")


def test_the_human_baseline_is_corrected_too_and_a_judge_no_better_than_chance_gives_nan():
    baseline = human_baseline(turns(), FollowupCorrection(RATES, RATES.source)).iloc[0]
    assert list(baseline.index) == with_correction_columns(HUMAN_BASELINE_COLUMNS)
    assert baseline["followup_corrected"] == pytest.approx(corrected_rate(10, 40, RATES).corrected)
    chance = JudgeErrorRates(10, 10, 10, 10, "coin")
    row = realism_table(turns(), resamples=20, permutations=5, correction=FollowupCorrection(chance, "coin")).iloc[0]
    assert np.isnan(row["followup_sim_corrected"]) and row["corrected_with"] == "coin"


def test_the_printed_table_shows_both_corrected_rates_and_names_the_error_counts():
    correction = FollowupCorrection(RATES, RATES.source)
    realism = RunRealism(realism_table(turns(), resamples=20, permutations=5, correction=correction),
                         human_baseline(turns(), correction), False)
    columns = header(realism)
    assert CORRECTED_HEADER[0] in columns and columns.index(CORRECTED_HEADER[0]) == columns.index("follow-up real") + 1
    rows = realism_rows(realism)
    assert all(len(r) == len(columns) for r in rows)
    sim_cell = rows[0][columns.index(CORRECTED_HEADER[0])]
    assert sim_cell.startswith(f"{realism.table.followup_sim_corrected.iloc[0]:.0%} (")
    assert rows[1][columns.index(CORRECTED_HEADER[1])].startswith(f"{realism.baseline.followup_corrected.iloc[0]:.0%}")
    assert "gold-dev" in as_markdown(realism).splitlines()[0]


def test_report_correct_with_threads_the_error_rates_into_the_realism_table(tmp_path, store, chats_file):  # noqa: F811
    chats_file([conversation(k, follow_ups=2) for k in range(12)])
    summary = real_context_probe(tmp_path, store, user_modes=["raw"], temperatures=[1.0])
    expected = run_realism(store, summary.run_id, "local", correction=RATES)
    assert "followup_sim_corrected" in expected.table and (expected.table.corrected_with == "gold-dev").all()
    store.close()
    rates = tmp_path / "rates.json"
    RATES.save(rates, judge="local")
    result = CliRunner().invoke(app, ["report", summary.run_id, "--store", str(store.path), "--judge", "local",
                                      "--correct-with", str(rates), "-f", "json"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    [simulated] = [r for r in rows if r["user_mode"] == "raw"]
    row = expected.table.iloc[0]
    assert simulated["realism_followup_sim_corrected"] == pytest.approx(row.followup_sim_corrected)
    assert simulated["realism_corrected_with"] == "gold-dev"
    [human] = [r for r in rows if r["user_mode"] == "human"]
    assert human["realism_followup_real_corrected"] == pytest.approx(expected.baseline.followup_corrected.iloc[0])
    markdown = CliRunner().invoke(app, ["report", summary.run_id, "--store", str(store.path), "--judge", "local",
                                        "--correct-with", str(rates), "-f", "markdown"], env={"COLUMNS": "200"})
    assert markdown.exit_code == 0, markdown.output
    assert "follow-up sim corrected" in markdown.output.split("### realism")[1]


def test_a_turn_is_marked_reviewed_only_where_the_review_stage_decided_it():
    frame = pd.DataFrame({"episode_id": ["a", "b", "c", "d"], "turn_index": [1, 1, 1, 1]}, index=[10, 11, 12, 13])
    labels = pd.DataFrame({"episode_id": ["a", "b", "c"], "turn_index": [1, 1, 1],
                           "raw": ['{"stage": "review"}', '{"stage": "fast"}', '{"stage": "pending"}']})
    assert decided_by_review(frame, labels).tolist() == [True, False, False, False]
    assert list(decided_by_review(frame, labels).index) == [10, 11, 12, 13]
    assert not decided_by_review(frame, labels.iloc[:0]).any()
