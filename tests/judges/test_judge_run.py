"""Judging a stored run: several judges side by side, resumable, unscored kept as unscored, agreement."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.judges.turns import user_turns
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.labels import identities, labels_frame, resolve_identity

cli = CliRunner()


async def stored_run(spec_dir, store) -> str:
    scenario = load_scenario(spec_dir())
    answers = ScriptedBackend(lambda r: "It is 12 because 0.15 * 80 = 12.")
    users = ScriptedBackend(lambda r: "Why 0.15?" if r.continue_final_message else "It is 12 because 0.15 * 80 = 12.")
    summary = await run_scenario(scenario, store, backends={"assistant": answers, "user": users}, show_progress=False)
    return summary.run_id


async def test_user_turns_carry_question_and_answer_as_shown(spec_dir, store):
    run_id = await stored_run(spec_dir, store)
    turns = user_turns(store, run_id)
    assert len(turns) == 12 and all(t.turn_index == 2 for t in turns)
    assert all(t.item.assistant.startswith("It is 12") and t.item.question for t in turns)
    assert {t.item.kind for t in turns} == {store.run(run_id).kind} == {"probe"}, "each turn names its run's scenario kind"


async def test_two_judges_side_by_side_and_rerun_skips_scored(spec_dir, store):
    run_id = await stored_run(spec_dir, store)
    verdicts = iter(['{"label": "genuine_followup", "reason": "asks why"}', "garbage"] * 100)
    llm = ScriptedBackend(lambda r: next(verdicts) if r.messages[-1]["role"] == "user" and len(r.messages) == 1 else "still garbage")
    first = await judge_run(store, run_id, load_judge("failure-modes"), show_progress=False, backend=llm)
    assert first.turns == 12 and first.scored + first.unscored == 12 and first.unscored > 0
    frame = labels_frame(store, run_id, first.identity)
    unscored = frame[frame.status == "unscored"]
    assert unscored.label.isna().all() and unscored.raw.str.contains("garbage").all()

    local = await judge_run(store, run_id, load_judge("local"), show_progress=False)
    assert local.scored == 12
    assert {i.judge for i in identities(store, run_id)} == {"failure-modes", "local"}
    assert len(labels_frame(store, run_id, first.identity)) == 12, "the first judge's labels are kept"

    fixed = ScriptedBackend(lambda r: '{"label": "restate_question", "reason": "x"}')
    again = await judge_run(store, run_id, load_judge("failure-modes"), show_progress=False, backend=fixed)
    assert again.skipped == first.scored and again.scored == first.unscored and len(fixed.requests) == first.unscored
    latest = labels_frame(store, run_id, first.identity)
    assert (latest.status == "scored").all() and len(latest) == 12
    total = store.conn.execute("SELECT COUNT(*) FROM labels WHERE judge='failure-modes'").fetchone()[0]
    assert total == 12 + first.unscored, "append-only: the unscored rows stay beneath the new ones"


async def test_agree_and_report_show_judge_columns(spec_dir, store, tmp_path):
    run_id = await stored_run(spec_dir, store)
    await judge_run(store, run_id, load_judge("local"), show_progress=False)
    await judge_run(store, run_id, load_judge("followup"), show_progress=False,
                    backend=ScriptedBackend(lambda r: '{"followup": true, "reason": "asks"}'))
    db = str(store.path)
    out = cli.invoke(app, ["agree", run_id, "--a", "local", "--b", "followup", "--store", db])
    assert out.exit_code == 0, out.output
    assert "on 12 turns" in out.output and "Cohen's κ" in out.output
    report = json.loads(cli.invoke(app, ["report", run_id, "--store", db, "-f", "json"]).stdout)
    assert all({"followup_rate", "followup_lo", "unscored", "share_echo_assistant"} <= set(r) for r in report)
    assert all(r["judged"] == 3 for r in report)
    followup_report = json.loads(cli.invoke(app, ["report", run_id, "--store", db, "-f", "json", "--judge", "followup"]).stdout)
    assert all(r["followup_rate"] == 1.0 for r in followup_report)
    missing = cli.invoke(app, ["agree", run_id, "--a", "local", "--b", "human", "--store", db])
    assert missing.exit_code == 2 and "no labels from 'human'" in missing.output


async def test_human_labels_import_and_fleiss(spec_dir, store, tmp_path):
    run_id = await stored_run(spec_dir, store)
    await judge_run(store, run_id, load_judge("local"), show_progress=False)
    turns = user_turns(store, run_id)
    for name, label in (("ann1", "genuine_followup"), ("ann2", "restate_question")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps({"episode_id": t.episode_id, "turn_index": t.turn_index, "label": label}) for t in turns))
        out = cli.invoke(app, ["import-labels", run_id, str(path), "--annotator", name, "--store", str(store.path)])
        assert out.exit_code == 0 and "stored 12 labels" in out.output
    assert resolve_identity(store, run_id, "human:ann1").model == "ann1"
    out = cli.invoke(app, ["agree", run_id, "--a", "human:ann1", "--b", "human:ann2", "--c", "local", "--store", str(store.path)])
    assert out.exit_code == 0 and "Fleiss' κ over 3 annotators" in out.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"episode_id": "nope", "turn_index": 2, "label": "other"}))
    out = cli.invoke(app, ["import-labels", run_id, str(bad), "--annotator", "x", "--store", str(store.path)])
    assert out.exit_code == 2 and "bad.jsonl:1" in out.output


def test_eval_judge_prints_the_summary_line_last(tmp_path):
    from helpers import REPO

    out = cli.invoke(app, ["eval-judge", "--judge", "local", str(REPO / "tests/fixtures/labelled-turns.jsonl")])
    assert out.exit_code == 0, out.output
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("kappa=") and " f1_followup=" in last and last.endswith(" n=57")
    metrics = dict(part.split("=") for part in last.split())
    assert float(metrics["kappa"]) >= 0.6 and float(metrics["f1_followup"]) >= 0.8, "hand-made turns, concise answers"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "assistant": "a", "user_turn": "u", "label": "great"}\n')
    out = cli.invoke(app, ["eval-judge", str(bad)])
    assert out.exit_code == 2 and "bad.jsonl:1" in out.output and "unknown label" in out.output


def test_labels_table_refuses_a_label_without_status_consistency(store):
    try:
        with store.conn:
            store.conn.execute("INSERT INTO labels (run_id, episode_id, turn_index, judge, judge_version, status, label, created_at)"
                               " VALUES ('r','e',2,'j','1','unscored','other','now')")
    except sqlite3.IntegrityError:
        return
    raise AssertionError("an unscored row with a label must be refused")


def test_eval_judge_of_a_learned_judge_shows_what_hand_labelling_its_least_sure_turns_buys():
    from helpers import REPO

    out = cli.invoke(app, ["eval-judge", "--judge", "learned", str(REPO / "tests/fixtures/labelled-turns.jsonl")])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("agreement if the least sure turns are labelled by hand"))
    rows = [line.split() for line in lines[start + 2:start + 9]]
    assert [r[1] for r in rows] == ["0", "6", "11", "14", "17", "23", "28"], "10/20/25/30/40/50 % of 57 turns"
    summary = dict(part.split("=") for part in lines[-1].split())
    assert float(rows[0][2]) == pytest.approx(float(summary["kappa"]), abs=5e-4), "no hand labels: the judge's own κ"
    kappas = [float(r[2]) for r in rows]
    assert kappas == sorted(kappas) and kappas[-1] > kappas[0], "each hand label can only fix a turn"
    local = cli.invoke(app, ["eval-judge", "--judge", "local", str(REPO / "tests/fixtures/labelled-turns.jsonl")])
    assert "least sure" not in local.stdout, "the rules store no probability, so there is no curve"


def _reviewer_curve(tmp_path, replies: list[str]) -> list[dict]:
    import yaml
    from helpers import REPO

    agent = tmp_path / "reviewer.yaml"
    agent.write_text(yaml.safe_dump({"name": "scripted-reviewer", "backend": "scripted", "model": "scripted-reviewer",
                                     "outputs": replies, "concurrency": 1}))
    gold = str(REPO / "tests/fixtures/labelled-turns.jsonl")
    out = cli.invoke(app, ["eval-judge", "--judge", "learned", gold, "--reviewer", "failure-modes",
                           "--reviewer-model", str(agent), "--reviewer-upto", "0.2"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert "reviewing the least sure 11 turns (20%) with failure-modes..." in lines
    start = next(i for i, line in enumerate(lines) if line.startswith("agreement if the least sure turns take failure-modes's label"))
    header = lines[start + 1].split()
    assert header == ["share_by_hand", "turns_by_hand", "unscored_reviews", "kappa", "followup_f1"]
    return [dict(zip(header, line.split())) for line in lines[start + 2:start + 5]]


def test_eval_judge_with_an_llm_reviewer_judges_only_the_least_sure_turns_and_prints_its_curve(tmp_path):
    from helpers import REPO

    rows = _reviewer_curve(tmp_path, ['{"label": "genuine_followup", "reason": "scripted"}'])
    assert [r["turns_by_hand"] for r in rows] == ["0", "6", "11"], "the curve stops at the share reviewed"
    assert [r["unscored_reviews"] for r in rows] == ["0", "0", "0"]
    garbled = _reviewer_curve(tmp_path, ["not json at all"])
    assert [r["unscored_reviews"] for r in garbled] == ["0", "6", "11"], "a reply that never parses is unscored"
    assert len({r["kappa"] for r in garbled}) == 1, "an unscored review keeps the fast label"
    local = cli.invoke(app, ["eval-judge", "--judge", "local", str(REPO / "tests/fixtures/labelled-turns.jsonl"),
                             "--reviewer", "failure-modes", "--reviewer-model", str(tmp_path / "reviewer.yaml")])
    assert local.exit_code == 2 and "stores its margin" in local.output


def test_a_hostile_reviewer_name_is_printed_as_text_not_markup_or_escapes(tmp_path):
    import yaml
    from helpers import REPO

    agent = tmp_path / "reviewer.yaml"
    agent.write_text(yaml.safe_dump({"name": "scripted-reviewer", "backend": "scripted", "model": "scripted-reviewer",
                                     "outputs": ['{"label": "genuine_followup", "reason": "scripted"}'], "concurrency": 1}))
    spec = yaml.safe_load((REPO / "judges/failure-modes.yaml").read_text())
    spec["prompt_file"] = str(REPO / "judges" / spec["prompt_file"])
    hostile = tmp_path / "rev[red]\x1b[2J.yaml"
    hostile.write_text(yaml.safe_dump(spec))
    out = cli.invoke(app, ["eval-judge", "--judge", "learned", str(REPO / "tests/fixtures/labelled-turns.jsonl"),
                           "--reviewer", str(hostile), "--reviewer-model", str(agent), "--reviewer-upto", "0.1"])
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output, "no escape sequence reaches the terminal"
    assert "rev[red]" in out.output and "reviewing the least sure 6 turns (10%) with" in out.output, "brackets are text, not markup"


def test_eval_judge_checks_corrected_and_reviewed_intervals_against_the_reference_rate(tmp_path):
    from helpers import REPO

    gold = str(REPO / "tests/fixtures/labelled-turns.jsonl")
    dev = str(REPO / "judges/models/learned-3.dev-error-rates.json")
    out = cli.invoke(app, ["eval-judge", "--judge", "learned", gold, "--correct-with", dev, "--review-share", "0.25"],
                     env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    covered = [line for line in lines if " 95% intervals cover the reference rate in " in line]
    assert [line.split()[0] for line in covered] == ["corrected", "reviewed"] and all(line.endswith(" of 1 conditions") for line in covered)
    start = next(i for i, line in enumerate(lines) if line.startswith("reviewed labels per condition, the least sure 25%"))
    header, row = lines[start + 1].split(), lines[start + 2].split()
    values = dict(zip(header, row))
    assert values["turns"] == "57" and values["reviewed_share"] == "0.25" and values["covers"] in ("True", "False")
    assert float(values["corrected_lo"]) <= float(values["corrected"]) <= float(values["corrected_hi"])

    bare = tmp_path / "bare.json"
    bare.write_text('{"true_positives": 3, "false_negatives": 1, "true_negatives": 9, "false_positives": 1}')
    refused = cli.invoke(app, ["eval-judge", "--judge", "learned", gold, "--correct-with", str(bare), "--review-share", "0.2"])
    assert refused.exit_code == 2 and "per-turn margins" in refused.output
    rules = cli.invoke(app, ["eval-judge", "--judge", "local", gold, "--correct-with", dev, "--review-share", "0.2"])
    assert rules.exit_code == 2 and "stores its margin (--judge learned), not local" in rules.output
