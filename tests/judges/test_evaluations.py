"""The measured figures behind each judge: shipped ones, records eval-judge --record appends, the report's line."""

from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from testbed.judges.evaluations import (CorruptRecordWarning, JudgeFigure, figures_for, figures_line, matches,
                                        record_evaluation, recorded_figures, records_path, shipped_figures)
from testbed.specs.errors import SpecError
from testbed.store.records import JudgeIdentity

LEARNED = JudgeIdentity("learned", "learned-2+ab12")
LOCAL = JudgeIdentity("local", "local-3")
MODES = JudgeIdentity("failure-modes", "failure-modes-2", "smollm2")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_CACHE", str(tmp_path / "cache"))


def _labelled(tmp_path, name="set.jsonl"):
    path = tmp_path / name
    rows = [("What is 2 + 3?", "2 + 3 = 5.", "Why is it 5 and not 6?", "genuine_followup"),
            ("What is 2 + 3?", "2 + 3 = 5.", "Thanks!", "short_filler"),
            ("Name a colour.", "Blue.", "Name a colour.", "restate_question")]
    path.write_text("".join(json.dumps({"question": q, "assistant": a, "user_turn": u, "label": lab}) + "\n" for q, a, u, lab in rows))
    return path


def test_shipped_figures_are_the_readme_table():
    learned = [(f.labelled_set, f.n, f.kappa, f.followup_f1, f.held_out) for f in figures_for(LEARNED)]
    assert learned == [("gold dev", 390, 0.742, 0.632, True),
                       ("grouped CV on judges/training/labels.jsonl", 1563, 0.609, 0.511, False)]
    local = [(f.labelled_set, f.kappa, f.followup_f1, f.held_out) for f in figures_for(LOCAL)]
    assert local == [("held-out gold", 0.72, 0.55, True), ("gold dev", 0.82, 0.83, False),
                     ("held-out later turns judges/training/labels-conversation-heldout.jsonl", 0.362, 0.447, True)]
    assert {f.source for f in figures_for(LOCAL)} == {"shipped"}


def test_the_report_line_names_sets_and_figures_or_says_what_to_run():
    assert figures_line(LEARNED) == ("learned@learned-2+ab12: gold dev (390, held out) κ 0.742 / F1 0.632; "
                                     "grouped CV on judges/training/labels.jsonl (1563, not held out) κ 0.609 / F1 0.511")
    assert figures_line(MODES) == ("failure-modes@failure-modes-2:smollm2: no measured figures — run `testbed eval-judge "
                                   "../shared/gold/dev.jsonl --judge failure-modes --model AGENT --record` before trusting it")
    assert "--judge local-3 --record`" in figures_line(JudgeIdentity("local-3", "local-3"))


def test_selectors_match_on_the_version_before_the_digest_and_on_a_named_model():
    assert matches("learned@learned-2", LEARNED) and matches("learned@learned-2+ab12", LEARNED)
    assert not matches("learned@learned-2+ff00", LEARNED) and not matches("learned@learned-3", LEARNED)
    assert not matches("learned-1@learned-2", LEARNED)
    assert matches("failure-modes@failure-modes-2", MODES) and matches("failure-modes@failure-modes-2:smollm2", MODES)
    assert not matches("failure-modes@failure-modes-2:qwen", MODES) and not matches("failure-modes@failure-modes-1", MODES)
    assert figures_for(JudgeIdentity("learned", "learned-9+ab12")) == []


def test_a_recorded_evaluation_comes_first_newest_per_set(tmp_path, monkeypatch):
    labelled = _labelled(tmp_path)
    assert records_path() == tmp_path / "cache" / "judge-evaluations.jsonl"
    first = record_evaluation(MODES, labelled, n=3, kappa=0.5, followup_f1=float("nan"), unscored=0, agent="agents/x.yaml")
    assert first.sha256 == hashlib.sha256(labelled.read_bytes()).hexdigest()[:16] and first.followup_f1 is None
    line = json.loads(records_path().read_text().splitlines()[0])
    assert (line["judge"], line["model"], line["agent"], line["labelled_set"], line["n"], line["unscored"]) == (
        "failure-modes@failure-modes-2:smollm2", "smollm2", "agents/x.yaml", str(labelled), 3, 0)
    assert line["followup_f1"] is None and line["date"][:4].isdigit()
    later = first.model_copy(update={"kappa": 0.75, "unscored": 1, "date": "2999-01-01T00:00:00+00:00"})
    with records_path().open("a") as handle:
        handle.write(json.dumps({**line, "kappa": later.kappa, "unscored": 1, "date": later.date}) + "\n")
    other = record_evaluation(MODES, _labelled(tmp_path, "other.jsonl"), n=3, kappa=0.25, followup_f1=1.0, unscored=0)
    record_evaluation(JudgeIdentity("failure-modes", "failure-modes-2", "qwen"), labelled, n=3, kappa=0.1, followup_f1=0.0, unscored=0)
    figures = figures_for(MODES)
    assert [(f.path, f.kappa) for f in figures] == [(str(labelled), 0.75), (other.path, 0.25)]
    assert all(f.source == "recorded" and f.held_out is None for f in figures)
    assert figures_line(MODES).startswith(f"failure-modes@failure-modes-2:smollm2: {labelled} (3, 1 unscored, recorded 2999-01-01, "
                                          f"sha256 {first.sha256[:8]}) κ 0.750 / F1 n/a; {other.path} (3, recorded ")
    assert len(recorded_figures()) == 4


def test_a_corrupt_record_is_skipped_with_a_warning_naming_file_and_line(tmp_path):
    kept = record_evaluation(LOCAL, _labelled(tmp_path), n=3, kappa=1.0, followup_f1=1.0, unscored=0)
    with records_path().open("a") as handle:
        handle.write('{"judge": "local@local-3", "n": \n\n[1, 2]\n')
    with pytest.warns(CorruptRecordWarning) as caught:
        figures = figures_for(LOCAL)
    assert [f.source for f in figures] == ["recorded", "shipped", "shipped", "shipped"] and figures[0] == kept
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and messages[0].startswith(f"{records_path()}:2: ") and messages[1].startswith(f"{records_path()}:4: ")


@pytest.mark.parametrize("text, where, field", [
    ("version: 1\njudges:\n  learned@learned-2:\n    - set: gold dev\n      n: 390\n      kappa: high\n"
     "      followup_f1: 0.5\n      held_out: true\n", ":6", "judges.learned@learned-2.0.kappa"),
    ("version: 1\njudges:\n  learned@learned-2:\n    - set: gold dev\n      n: 390\n      kappa: 0.5\n"
     "      followup_f1: 0.5\n", ":4", "judges.learned@learned-2.0.held_out"),
    ("version: 1\njudges:\n  learned:\n    - {set: dev, n: 1, kappa: 0.5, followup_f1: 0.5, held_out: true}\n", ":3", "judges"),
    ("version: 1\njudges: [unclosed\n", "", "line 3"),
])
def test_a_malformed_shipped_file_is_one_error_naming_file_and_line(tmp_path, text, where, field):
    path = tmp_path / "evaluations.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        shipped_figures(path)
    assert caught.value.path == f"{path}{where}" and caught.value.field == field, str(caught.value)
    with pytest.raises(SpecError):
        figures_line(LEARNED, shipped=path)


def test_eval_judge_record_appends_the_run_to_the_records(tmp_path):
    from testbed.cli import app

    labelled = _labelled(tmp_path)
    out = CliRunner().invoke(app, ["eval-judge", "--judge", "local", "--record", str(labelled)])
    assert out.exit_code == 0, out.output
    summary = dict(part.split("=") for part in out.stdout.strip().splitlines()[-1].split())
    [figure] = [f for f in figures_for(LOCAL) if f.source == "recorded"]
    assert isinstance(figure, JudgeFigure) and figure.judge == "local@local-3" and figure.path == str(labelled)
    assert (figure.n, round(figure.kappa, 4), round(figure.followup_f1, 4)) == (
        int(summary["n"]), float(summary["kappa"]), float(summary["f1_followup"]))
    again = CliRunner().invoke(app, ["eval-judge", "--judge", "local", str(labelled)])
    assert again.exit_code == 0 and len(recorded_figures()) == 1, "without --record nothing is appended"
