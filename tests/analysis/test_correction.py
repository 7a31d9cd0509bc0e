"""Follow-up rates corrected for judge error: the point estimate inverts the judge, the interval covers the truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from testbed.analysis.judge_quality.correction import JudgeErrorRates, corrected_rate, rogan_gladen


def test_rogan_gladen_inverts_a_known_judge():
    se, sp, p = 0.8, 0.9, 0.3
    q = se * p + (1 - sp) * (1 - p)
    assert rogan_gladen(q, se, sp) == pytest.approx(p)
    assert rogan_gladen(0.01, se, sp) == 0.0 and rogan_gladen(0.99, se, sp) == 1.0, "clipped to [0, 1]"
    assert math.isnan(rogan_gladen(0.3, 0.5, 0.5)), "a judge no better than chance cannot be inverted"


def test_counts_give_the_error_rates():
    rates = JudgeErrorRates.from_pairs([True, True, False, False, True], [True, False, True, False, True], "gold")
    assert (rates.true_positives, rates.false_negatives, rates.true_negatives, rates.false_positives) == (2, 1, 1, 1)
    assert rates.sensitivity == pytest.approx(2 / 3) and rates.specificity == pytest.approx(0.5)


def test_an_uninformative_judge_is_not_corrected():
    out = corrected_rate(10, 50, JudgeErrorRates(5, 5, 5, 5, "x"))
    assert not out.informative and math.isnan(out.corrected) and out.observed == 0.2


def simulate(truth: float, se: float, sp: float, n_run: int, n_pos: int, n_neg: int, rng) -> tuple[bool, float, float]:
    """One study: a labelled set measures the judge, a run is judged; does the interval hold the truth?"""
    tp = rng.binomial(n_pos, se)
    tn = rng.binomial(n_neg, sp)
    rates = JudgeErrorRates(tp, n_pos - tp, tn, n_neg - tn, "sim")
    real = rng.random(n_run) < truth
    judged = np.where(real, rng.random(n_run) < se, rng.random(n_run) >= sp)
    out = corrected_rate(int(judged.sum()), n_run, rates, draws=2000, seed=int(rng.integers(1 << 30)))
    return out.lo <= truth <= out.hi, out.corrected, judged.mean()


@pytest.mark.parametrize("truth, se, sp", [(0.15, 0.5, 0.93), (0.4, 0.8, 0.9), (0.05, 0.7, 0.97)])
def test_the_interval_covers_the_known_truth_about_95_percent_of_the_time(truth, se, sp):
    rng = np.random.default_rng(7)
    results = [simulate(truth, se, sp, n_run=400, n_pos=80, n_neg=300, rng=rng) for _ in range(300)]
    coverage = np.mean([hit for hit, _, _ in results])
    assert 0.91 <= coverage <= 0.995, f"coverage {coverage:.3f}"
    corrected = np.mean([c for _, c, _ in results])
    observed = np.mean([o for _, _, o in results])
    assert abs(corrected - truth) < abs(observed - truth) or abs(corrected - truth) < 0.02, "the correction removes the judge's bias"


def test_the_naive_interval_that_ignores_judge_uncertainty_would_not_cover():
    """Why the judge's own uncertainty must be in the interval: with a small labelled set, a
    sampling-only interval misses the truth far more often than 5 %."""
    from testbed.analysis.stats import wilson_interval

    rng = np.random.default_rng(3)
    misses_naive, misses_full = 0, 0
    for _ in range(200):
        hit, _, _ = simulate(0.3, 0.6, 0.9, n_run=2000, n_pos=30, n_neg=60, rng=rng)
        misses_full += not hit
        tp, tn = rng.binomial(30, 0.6), rng.binomial(60, 0.9)
        se_hat, sp_hat = tp / 30, tn / 60
        q = (0.6 * 0.3 + 0.1 * 0.7)
        lo, hi = wilson_interval(round(q * 2000), 2000)
        naive_lo, naive_hi = rogan_gladen(lo, se_hat, sp_hat), rogan_gladen(hi, se_hat, sp_hat)
        misses_naive += not (naive_lo <= 0.3 <= naive_hi)
    assert misses_full / 200 <= 0.09 and misses_naive / 200 >= 0.3


def test_eval_judge_saves_error_rates_and_the_report_shows_corrected_rates(tmp_path, spec_dir):
    import asyncio
    import json

    from typer.testing import CliRunner

    from testbed.backends.scripted import ScriptedBackend
    from testbed.cli import app as cli
    from testbed.running.runner import run_scenario
    from testbed.specs.loader import load_scenario
    from testbed.store import Store

    gold = tmp_path / "gold.jsonl"
    lines = []
    for k in range(12):
        q = f"Tom has {k} apples and buys 3 more. How many now?"
        a = f"He has {k + 3} apples."
        turn, label = (f"Why did you add 3 to {k}?", "genuine_followup") if k % 2 else (q, "restate_question")
        lines.append({"id": str(k), "question": q, "assistant": a, "user_turn": turn, "label": label,
                      "source_model": "m", "mode": "raw" if k < 6 else "instructed", "temperature": 0.0, "perturbation": "none"})
    gold.write_text("".join(json.dumps(x) + "\n" for x in lines))
    saved = tmp_path / "errors.json"
    runner = CliRunner()
    out = runner.invoke(cli, ["eval-judge", str(gold), "--judge", "local", "--save-error-rates", str(saved)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "follow-up rate per condition" in out.output
    assert any("reference_rate" in line and "difference" in line for line in out.output.splitlines()), "the table is not wrapped"
    counts = json.loads(saved.read_text())
    assert counts["true_positives"] + counts["false_negatives"] == 6 and counts["true_negatives"] + counts["false_positives"] == 6

    store_path = tmp_path / "s.sqlite"
    store = Store(store_path)
    asyncio.run(run_scenario(load_scenario(spec_dir(items={"limit": 2})), store, show_progress=False,
                             backends={"assistant": ScriptedBackend(lambda r: "He has 18 apples."),
                                       "user": ScriptedBackend(lambda r: "Why did you add 3?")}))
    run_id = store.runs()[0]["run_id"]
    store.close()
    assert runner.invoke(cli, ["judge", run_id, "--store", str(store_path)]).exit_code == 0
    report = runner.invoke(cli, ["report", run_id, "--store", str(store_path), "--format", "csv", "--correct-with", str(saved)])
    assert report.exit_code == 0, report.output
    header = report.output.splitlines()[0].split(",")
    assert {"followup_rate", "followup_corrected", "corrected_lo", "corrected_hi", "corrected_with"} <= set(header)
    assert header.index("followup_corrected") == header.index("followup_hi") + 1
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    refused = runner.invoke(cli, ["report", run_id, "--store", str(store_path), "--correct-with", str(bad)])
    assert refused.exit_code == 2 and "not error counts" in refused.output


def test_the_table_report_shows_corrected_rates_and_one_model_column_for_self_play():
    import pandas as pd

    from testbed.analysis.reports.render import SELF_PLAY, as_rich_tables

    base = {"user_mode": "raw", "temperature": 0.0, "perturbation": "none", "dataset": "gsm8k", "episodes": 10, "errors": 0,
            "accuracy": 0.5, "accuracy_lo": 0.2, "accuracy_hi": 0.8, "scored": 10, "user_turn_words": 5.0, "empty_user_turns": 0,
            "identical_to_question": 0.0, "identical_lo": 0.0, "identical_hi": 0.3, "judged": 10, "unscored": 0, "unjudged": 0,
            "followup_rate": 0.2, "followup_lo": 0.05, "followup_hi": 0.5, "followup_corrected": 0.15, "corrected_lo": 0.0,
            "corrected_hi": 0.6, "corrected_with": "cv:x"}
    frame = pd.DataFrame([{**base, "assistant_model": m, "user_model": m} for m in ("small", "big")])
    tables = as_rich_tables(frame, "run")
    judged = next(t for t in tables if t.title == "judge labels")
    headers = [c.header for c in judged.columns]
    assert headers[0] == SELF_PLAY and "user" not in headers and "corrected (95% CI)" in headers
    mixed = pd.DataFrame([{**base, "assistant_model": "small", "user_model": "big"}, {**base, "assistant_model": "big", "user_model": "big"}])
    assert [c.header for c in as_rich_tables(mixed, "run")[0].columns][:1] == ["assistant"]


DEV = JudgeErrorRates(36, 19, 312, 23, "dev")
"""The learned judge's counts on the gold dev set."""


def test_no_follow_ups_in_fifty_turns_gives_an_interval_from_zero_with_a_real_width():
    out = corrected_rate(0, 50, DEV)
    assert out.informative and out.lo == 0.0 < out.corrected < out.hi
    assert 0.05 < out.hi < 0.2, "fifty turns cannot rule out a share of a few percent"


def test_every_count_of_a_short_run_gives_an_interval_of_real_width_holding_its_median():
    for x in range(16):
        out = corrected_rate(x, 15, DEV)
        assert 0.0 <= out.lo <= out.corrected <= out.hi <= 1.0 and out.hi - out.lo > 0.05, (x, out)
    assert corrected_rate(15, 15, DEV).hi == 1.0 and corrected_rate(0, 15, DEV).lo == 0.0


def test_a_run_of_nothing_is_not_corrected_and_a_seed_repeats():
    empty = corrected_rate(0, 0, DEV)
    assert not empty.informative and math.isnan(empty.lo) and math.isnan(empty.hi) and math.isnan(empty.observed)
    assert corrected_rate(7, 80, DEV, seed=3) == corrected_rate(7, 80, DEV, seed=3)


def _beta_hpd(a: float, b: float, level: float = 0.95) -> tuple[float, float]:
    """The shortest interval holding `level` of Beta(a, b), searched over its lower tail."""
    from scipy.stats import beta

    tails = np.linspace(0.0, 1.0 - level, 2001)
    lo, hi = beta.ppf(tails, a, b), beta.ppf(tails + level, a, b)
    k = int(np.argmin(hi - lo))
    return float(lo[k]), float(hi[k])


@pytest.mark.parametrize("x, n", [(0, 50), (5, 50), (30, 200)])
def test_a_reviewer_taken_as_right_on_every_turn_gives_the_plain_binomial_posterior(x, n):
    from scipy.stats import beta

    from testbed.analysis.judge_quality.correction import reviewed_rate

    out = reviewed_rate((0, 0, DEV), (x, n, None))
    lo, hi = _beta_hpd(x + 1, n - x + 1)
    assert out.observed == x / n and out.lo == pytest.approx(lo, abs=0.01) and out.hi == pytest.approx(hi, abs=0.01)
    assert out.corrected == pytest.approx(float(beta.median(x + 1, n - x + 1)), abs=0.003)


def test_a_review_of_no_turns_is_the_fast_judges_correction_and_the_parts_are_weighted_by_turns():
    from testbed.analysis.judge_quality.correction import reviewed_rate

    alone, fast = reviewed_rate((6, 100, DEV), (0, 0, None)), corrected_rate(6, 100, DEV)
    assert alone.lo == pytest.approx(fast.lo, abs=0.01) and alone.hi == pytest.approx(fast.hi, abs=0.01)
    mixed = reviewed_rate((0, 90, DEV), (10, 10, None))
    assert mixed.observed == 0.1 and mixed.lo > 0.05, "a tenth of the turns all follow-ups put a floor under the whole"
    assert reviewed_rate((0, 0, DEV), (0, 0, None)).informative is False
    assert reviewed_rate((3, 40, JudgeErrorRates(5, 5, 5, 5, "chance")), (1, 10, None)).informative is False


def test_within_a_margin_band_counts_only_the_surer_turns_and_says_so():
    rates = JudgeErrorRates.from_pairs([True, True, False, False, True], [True, False, True, False, True], "gold",
                                       margins=[0.9, 0.05, 0.4, 0.6, 0.2])
    band = rates.within(0.3)
    assert (band.true_positives, band.false_negatives, band.true_negatives, band.false_positives) == (1, 1, 1, 0)
    assert band.source == "gold, margin ≥ 0.3" and [m for m, _, _ in band.turns] == [0.9, 0.4, 0.6]
    assert rates.within(0.0) == JudgeErrorRates(2, 1, 1, 1, "gold, margin ≥ 0", rates.turns)
    with pytest.raises(ValueError, match=r"hold no per-turn margins.*--judge learned --save-error-rates FILE"):
        JudgeErrorRates(2, 1, 1, 1, "gold").within(0.3)


@pytest.mark.parametrize("fast, review", [((0, 13), (0, 2)), ((0, 48), (0, 2)), ((1, 13), (0, 2))])
def test_a_reviewed_rate_with_no_follow_up_in_either_part_keeps_zero_in_its_interval(fast, review):
    from testbed.analysis.judge_quality.correction import reviewed_rate

    out = reviewed_rate((*fast, DEV), (*review, None))
    assert out.lo == 0.0 < out.hi, "a sum of two posteriors has no density at 0, yet a share of 0 is the likeliest here"


def test_an_interval_reaches_a_boundary_only_when_little_mass_lies_beyond_it():
    from scipy.stats import beta

    from testbed.analysis.judge_quality.correction import BOUNDARY_SLACK, reviewed_rate

    out = reviewed_rate((0, 0, DEV), (5, 50, None))
    assert out.lo > 0.0 and beta.cdf(out.lo, 6, 46) > BOUNDARY_SLACK, "5 of 50 leaves 1.6 % of the mass below the interval"
    top = reviewed_rate((0, 0, DEV), (50, 50, None))
    assert top.hi == 1.0
