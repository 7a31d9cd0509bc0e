"""Review: the fast judge's least sure turns go to a reviewer; reviewed labels name both stages and say who decided."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from typer.testing import CliRunner

from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app
from testbed.judges.learned.doubt import stored_margin
from testbed.judges.review import FAST, PENDING, REVIEW, ReviewError, compose_review, plan_review, stage_of
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.labels import default_identity, identities, latest_labels, write_labels
from testbed.store.records import JudgeIdentity, LabelRow

cli = CliRunner()
ALICE = JudgeIdentity("human", "v1", "alice")


async def learned_run(spec_dir, store) -> tuple[str, JudgeIdentity]:
    """A scripted probe of 12 user turns that differ, labelled by the learned judge."""
    scenario = load_scenario(spec_dir())
    turns = iter(["Why 0.15?", "ok thanks", "How do I bake bread?", "It is 12 because 0.15 * 80 = 12.", "so 12 then?",
                  "why why why why why why", "Could you show the steps?", "I need a recipe.", "what about 20%?",
                  "Let me know if you need anything else!", "thanks", "Is 12 right for 90 too?"] * 4)
    answers = ScriptedBackend(lambda r: "It is 12 because 0.15 * 80 = 12.")
    users = ScriptedBackend(lambda r: next(turns))
    summary = await run_scenario(scenario, store, backends={"assistant": answers, "user": users}, show_progress=False)
    labelled = await judge_run(store, summary.run_id, load_judge("learned"), show_progress=False)
    return summary.run_id, labelled.identity


async def test_the_least_sure_share_is_chosen_and_the_reviewed_labels_name_both_stages(spec_dir, store):
    run_id, fast = await learned_run(spec_dir, store)
    plan = plan_review(store, run_id, fast, 0.25)
    margins = {(r.episode_id, r.turn_index): stored_margin(r.raw) for r in latest_labels(store, run_id, fast)}
    assert plan.turns == 12 and len(plan.chosen) == 3
    chosen = [margins[k] for k in plan.chosen]
    rest = [m for k, m in margins.items() if k not in plan.chosen]
    assert chosen == sorted(chosen) and max(chosen) <= plan.cutoff == min(rest)

    reviewed = [LabelRow(e, t, "scored", "genuine_followup", True, "a person", None, 1) for e, t in plan.chosen[:2]]
    write_labels(store, run_id, ALICE, reviewed)
    composed = compose_review(store, plan, ALICE)
    assert composed.decided == {FAST: 9, REVIEW: 2, PENDING: 1}
    assert str(composed.identity).startswith("reviewed@learned@learned-6+") and str(composed.identity).endswith("/25%:human@v1:alice")
    fast_rows = {(r.episode_id, r.turn_index): r for r in latest_labels(store, run_id, fast)}
    for row in latest_labels(store, run_id, composed.identity):
        key = (row.episode_id, row.turn_index)
        stage = stage_of(row.raw)
        if key in plan.chosen[:2]:
            assert stage == REVIEW and row.label == "genuine_followup" and row.followup is True
        else:
            assert stage == (PENDING if key == plan.chosen[2] else FAST)
            assert (row.label, row.followup) == (fast_rows[key].label, fast_rows[key].followup)
        assert json.loads(row.raw)["fast"]["label"] == fast_rows[key].label
    assert default_identity(store, run_id) == composed.identity, "reviewed labels are shown first"


async def test_a_review_that_cannot_be_planned_says_why(spec_dir, store):
    run_id, fast = await learned_run(spec_dir, store)
    for share in (0.0, 1.5):
        with pytest.raises(ReviewError, match="must be above 0 and at most 1"):
            plan_review(store, run_id, fast, share)
    local = await judge_run(store, run_id, load_judge("local"), show_progress=False)
    with pytest.raises(ReviewError, match="stores no margin.*--judge learned"):
        plan_review(store, run_id, local.identity, 0.2)
    with pytest.raises(ReviewError, match="no labels from"):
        plan_review(store, run_id, JudgeIdentity("learned", "learned-9", ""), 0.2)
    everything = plan_review(store, run_id, fast, 1.0)
    assert len(everything.chosen) == 12 and everything.cutoff == float("inf")


def test_review_by_a_model_judge_pays_for_the_chosen_turns_only_and_every_face_reads_it(spec_dir, store, tmp_path):
    run_id, _ = asyncio.run(learned_run(spec_dir, store))
    judge_agent = tmp_path / "judge-model.yaml"
    judge_agent.write_text(yaml.safe_dump({"name": "scripted-judge", "backend": "scripted", "model": "scripted-judge",
                                           "outputs": ['{"label": "new_question", "reason": "scripted"}'], "concurrency": 1}))
    db = str(store.path)
    out = cli.invoke(app, ["review", run_id, "--by", "failure-modes", "--model", str(judge_agent), "--share", "0.5", "--store", db])
    assert out.exit_code == 0, out.output
    assert "reviewed 6 of the 6 chosen turns" in out.output and "6 (50%) by failure-modes" in out.output
    [model_judge] = [i for i in identities(store, run_id) if i.judge == "failure-modes"]
    assert len(latest_labels(store, run_id, model_judge)) == 6, "only the chosen turns were sent to the model"

    again = cli.invoke(app, ["review", run_id, "--by", "failure-modes", "--model", str(judge_agent), "--share", "0.5", "--store", db])
    assert again.exit_code == 0 and "6 reviewed before" in again.output

    report = json.loads(cli.invoke(app, ["report", run_id, "--store", db, "-f", "json"]).stdout)
    assert sum(r["judged"] for r in report) == 12
    shown = cli.invoke(app, ["report", run_id, "--store", db])
    assert "reviewed@learned@" in shown.output and "50% by the review" in shown.output, shown.output
    assert "gold dev (390, held out) κ 0.74 / F1 0.677" in " ".join(shown.output.split()), shown.output
    assert "failure-modes@failure-modes-3:scripted-judge: no measured figures" in shown.output and "--record" in shown.output


def test_review_by_a_person_without_a_terminal_keeps_the_fast_verdicts_pending(spec_dir, store):
    run_id, _ = asyncio.run(learned_run(spec_dir, store))
    out = cli.invoke(app, ["review", run_id, "--by", "human:bob", "--store", str(store.path)])
    assert out.exit_code == 0, out.output
    assert "no terminal: the labelling app was not opened" in out.output
    assert "3 chosen but not reviewed yet" in out.output and "9 (75%) by learned@" in out.output
    bad = cli.invoke(app, ["review", run_id, "--by", "human:b:c", "--no-app", "--store", str(store.path)])
    assert bad.exit_code == 2 and "annotator name" in bad.output


def test_reviewed_rates_are_corrected_stage_by_stage_with_the_fast_judges_band(spec_dir, store, tmp_path):
    run_id, _ = asyncio.run(learned_run(spec_dir, store))
    judge_agent = tmp_path / "judge-model.yaml"
    judge_agent.write_text(yaml.safe_dump({"name": "scripted-judge", "backend": "scripted", "model": "scripted-judge",
                                           "outputs": ['{"label": "genuine_followup", "reason": "scripted"}'], "concurrency": 1}))
    db = str(store.path)
    assert cli.invoke(app, ["review", run_id, "--by", "failure-modes", "--model", str(judge_agent), "--share", "0.5",
                            "--store", db]).exit_code == 0
    dev = "judges/models/learned-3.dev-error-rates.json"
    out = cli.invoke(app, ["report", run_id, "--store", db, "-f", "json", "--correct-with", dev])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert round(sum(r["reviewed_share"] * r["judged"] for r in rows)) == 6, "the share the review decided, per condition"
    for row in rows:
        assert row["corrected_lo"] <= row["followup_corrected"] <= row["corrected_hi"]
        assert row["corrected_hi"] - row["corrected_lo"] > 0.1, "three turns per condition leave a wide interval"
        assert "margin ≥" in row["corrected_with"], "the fast part is corrected with its errors within its band"
        assert row["corrected_with"].endswith("taken as right (its errors are not measured here)")
    shown = cli.invoke(app, ["report", run_id, "--store", db, "--correct-with", dev])
    assert "fast judge's part corrected for its errors on ../shared/gold/dev.jsonl within the band it decided" in " ".join(shown.output.split())

    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"true_positives": 36, "false_negatives": 19, "true_negatives": 312, "false_positives": 23}))
    refused = cli.invoke(app, ["report", run_id, "--store", db, "--correct-with", str(bare)])
    assert refused.exit_code == 2 and "hold no per-turn margins" in refused.output and "--save-error-rates" in refused.output

    probe_counts, dialogue_counts = ("judges/models/learned-3.cv-error-rates.probe.json", "judges/models/learned-3.cv-error-rates.dialogue.json")
    matched = cli.invoke(app, ["report", run_id, "--store", db, "--correct-with", probe_counts])
    assert matched.exit_code == 0 and "note:" not in matched.output, "a probe run corrected with probe-turn counts"
    mismatched = cli.invoke(app, ["report", run_id, "--store", db, "--correct-with", dialogue_counts])
    said = " ".join(mismatched.output.split())
    assert mismatched.exit_code == 0 and "holds the judge's errors on dialogue turns" in said and "has probe turns" in said
