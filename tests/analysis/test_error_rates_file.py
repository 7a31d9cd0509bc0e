"""The judge's error-rates file: one writer and one reader (`JudgeErrorRates.save` / `load`), and one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.analysis.judge_quality.correction import BadErrorRates, JudgeErrorRates

REPO = Path(__file__).resolve().parents[2]
FIX = "write them with `testbed eval-judge GOLD --judge J --save-error-rates FILE`"


def test_save_writes_the_judge_and_the_counts_and_load_reads_them_back(tmp_path):
    rates = JudgeErrorRates(36, 19, 312, 23, "../shared/gold/dev.jsonl")
    path = tmp_path / "rates.json"
    rates.save(path, judge="learned")
    expected = {"judge": "learned", "true_positives": 36, "false_negatives": 19, "true_negatives": 312,
                "false_positives": 23, "source": "../shared/gold/dev.jsonl"}
    assert path.read_text() == json.dumps(expected, indent=2) + "\n", "the file eval-judge and the trainer always wrote"
    assert JudgeErrorRates.load(path) == rates


def test_the_committed_files_load():
    for path in sorted((REPO / "judges" / "models").glob("*error-rates.json")):
        rates = JudgeErrorRates.load(path)
        assert rates.true_positives + rates.false_negatives > 0 and rates.source


def test_a_file_without_a_source_is_named_by_its_path(tmp_path):
    path = tmp_path / "bare.json"
    path.write_text(json.dumps({"true_positives": 1, "false_negatives": 2, "true_negatives": 3, "false_positives": 4}))
    assert JudgeErrorRates.load(path) == JudgeErrorRates(1, 2, 3, 4, str(path))


@pytest.mark.parametrize(("text", "field", "detail"), [
    ("{}", "true_positives", "(KeyError: 'true_positives')"),
    ('{"true_positives": 1, "false_negatives": "many"}', "false_negatives", "(ValueError: false_negatives: invalid literal"),
    ('{"true_positives": 1, "false_negatives": 2, "true_negatives": null}', "true_negatives", "(TypeError: true_negatives: "),
    ("[1, 2]", "(top level)", "(TypeError: the top level is a list, not a JSON object)"),
    ("{not json", "(file)", "(JSONDecodeError: "),
])
def test_bad_input_is_one_error_naming_the_file_and_the_field(tmp_path, text, field, detail):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(BadErrorRates) as caught:
        JudgeErrorRates.load(path)
    assert caught.value.path == str(path) and caught.value.field == field
    message = str(caught.value)
    assert message.startswith(f"{path}: not error counts {detail}") and message.endswith(FIX)
    if field.startswith("("):
        return
    assert field in message


def test_a_missing_file_is_the_same_error(tmp_path):
    with pytest.raises(BadErrorRates, match=r"missing\.json: not error counts \(FileNotFoundError: ") as caught:
        JudgeErrorRates.load(tmp_path / "missing.json")
    assert caught.value.field == "(file)"


class Failed(Exception):
    """What the patched `fail` raises, carrying its message."""


def test_report_refuses_a_bad_file_with_the_message_it_always_gave(tmp_path, monkeypatch):
    import importlib

    cli_app = importlib.import_module("testbed.cli.report_output")

    def fail(message: str, code: int = 2):
        raise Failed(message, code)

    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    monkeypatch.setattr(cli_app, "fail", fail)
    with pytest.raises(Failed) as caught:
        cli_app.error_rates_file(bad)
    assert caught.value.args == (f"--correct-with {bad}: not error counts (KeyError: 'true_positives'); {FIX}", 2)


def test_per_turn_margins_are_saved_one_line_each_and_read_back(tmp_path):
    rates = JudgeErrorRates.from_pairs([True, False, False], [True, True, False], "dev", margins=[0.5, 0.25, 0.125])
    path = tmp_path / "rates.json"
    rates.save(path, judge="learned")
    text = path.read_text()
    assert '    [0.25, false, true],\n' in text and json.loads(text)["turns"] == [[0.5, True, True], [0.25, False, True],
                                                                              [0.125, False, False]]
    assert JudgeErrorRates.load(path) == rates and JudgeErrorRates.load(path).turns[1] == (0.25, False, True)


@pytest.mark.parametrize(("turns", "detail"), [
    ('"many"', "turns: a str, not a list"),
    ('[[0.5, true]]', "turns[0]: [0.5, true] is not [margin, predicted, reference]"),
    ('[[0.5, true, true], ["x", true, false]]', 'turns[1]: ["x", true, false] is not'),
    ('[[0.5, 1, true]]', "turns[0]: [0.5, 1, true] is not"),
    ('[[0.5, true, true]]', "the per-turn verdicts do not add up to the four counts"),
])
def test_malformed_turns_are_named(tmp_path, turns, detail):
    path = tmp_path / "bad.json"
    path.write_text('{"true_positives": 1, "false_negatives": 0, "true_negatives": 1, "false_positives": 0, "turns": ' + turns + "}")
    with pytest.raises(BadErrorRates) as caught:
        JudgeErrorRates.load(path)
    assert caught.value.field == "turns" and detail in str(caught.value) and str(caught.value).endswith(FIX)


@pytest.mark.parametrize("name, counts", [("learned-2", (36, 19, 312, 23)), ("learned-3", (43, 12, 306, 29))])
def test_the_dev_files_hold_a_margin_for_every_turn_and_band_by_it(name, counts):
    rates = JudgeErrorRates.load(REPO / "judges" / "models" / f"{name}.dev-error-rates.json")
    assert (rates.true_positives, rates.false_negatives, rates.true_negatives, rates.false_positives) == counts
    assert len(rates.turns) == 390 and all(0.0 <= m <= 1.0 for m, _, _ in rates.turns), "a margin is P(the verdict is right)"
    cut = sorted(m for m, _, _ in rates.turns)[len(rates.turns) // 5]
    sure = rates.within(cut)

    def accuracy(r):
        return (r.true_positives + r.true_negatives) / len(r.turns)

    assert 300 <= len(sure.turns) <= 320 and accuracy(sure) > accuracy(rates) + 0.03, "the turns it is sure of, it gets right more often"


def test_the_shipped_per_kind_cv_counts_partition_the_pooled_ones():
    models = REPO / "judges" / "models"
    pooled = JudgeErrorRates.load(models / "learned-3.cv-error-rates.json")
    parts = [JudgeErrorRates.load(path) for path in sorted(models.glob("learned-3.cv-error-rates.*.json"))]
    assert {p.source.rsplit("(", 1)[1] for p in parts} >= {"probe turns)", "dialogue turns)"}
    for field in ("true_positives", "false_negatives", "true_negatives", "false_positives"):
        assert sum(getattr(p, field) for p in parts) == getattr(pooled, field)
    assert sorted(t for p in parts for t in p.turns) == sorted(pooled.turns), "every turn, margin included, in exactly one kind"
