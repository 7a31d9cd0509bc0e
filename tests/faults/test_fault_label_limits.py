"""Names and labels a user gives (reviewer, annotator, run id, judges named on the command line) are bounded: a longer
one is refused with one line naming the option and the limit, before anything is written, and is never echoed whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fault_specs import finished_probe, write_probe
from helpers import run_cli
from testbed.label_limits import LabelTooLong, checked_label
from testbed.limits import MAX_LABEL_CHARS

HUGE = "r" * 100_000


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """(store, run id) of a small finished probe, labelled by the default judge."""
    folder = tmp_path_factory.mktemp("judged")
    store = folder / "s.sqlite"
    return store, finished_probe(folder, store)


def _rows(store: Path) -> dict[str, int]:
    with sqlite3.connect(store) as conn:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("labels", "runs", "episodes")}


def _refused(out, option: str) -> None:
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{option} is {len(HUGE):,} characters long" in out.stderr
    assert f"limited to {MAX_LABEL_CHARS} characters" in out.stderr
    assert len(out.stdout + out.stderr) < 1_000, "the name is never echoed whole"
    assert "Traceback" not in out.stderr


def test_a_100_kb_reviewer_name_is_refused_before_any_label_is_written(judged_run):
    store, run = judged_run
    before = _rows(store)
    out = run_cli("review", run, "--by", f"human:{HUGE}", "--no-app", "--fast", "local", "--store", str(store))
    _refused(out, "--by human:NAME")
    assert _rows(store) == before, "not even the fast judge's labels"


@pytest.mark.parametrize("command", [
    lambda run: ["replay", run, "--label", HUGE],
    lambda run: ["judge", run, "--judge", HUGE],
    lambda run: ["agree", run, "--a", HUGE, "--b", "learned"],
    lambda run: ["report", run, "--judge", HUGE],
    lambda run: ["plot", run, "--judge", HUGE, "--out", "/nonexistent-plots"],
    lambda run: ["review", run, "--by", HUGE, "--no-app"],
    lambda run: ["show-episode", run, "x", "--judge", HUGE],
    lambda run: ["replay", run, "--label", "alice", "--uncertain-first", HUGE],
    lambda run: ["export", run, "--as", "sft", "--judge", HUGE, "--out", "/nonexistent-export"],
], ids=["replay --label", "judge --judge", "agree --a", "report --judge", "plot --judge", "review --by", "show-episode --judge",
        "replay --uncertain-first", "export --judge"])
def test_names_given_on_the_command_line_are_bounded(judged_run, command):
    store, run = judged_run
    args = command(run)
    option = next(a for a in args if a.startswith("--") and args[args.index(a) + 1] == HUGE)
    before = _rows(store)
    _refused(run_cli(*args, "--store", str(store)), option)
    assert _rows(store) == before


def test_an_annotator_name_of_imported_labels_is_bounded(judged_run, tmp_path):
    store, run = judged_run
    labels = tmp_path / "labels.jsonl"
    labels.write_text("")
    before = _rows(store)
    _refused(run_cli("import-labels", run, str(labels), "--annotator", HUGE, "--store", str(store)), "--annotator")
    assert _rows(store) == before
    from testbed.judges.human_labels import import_human_labels
    from testbed.store import Store

    db = Store(store)
    try:
        with pytest.raises(LabelTooLong, match="--annotator"):
            import_human_labels(db, run, labels, HUGE)
    finally:
        db.close()


def test_a_judge_named_to_compare_is_bounded(tmp_path):
    spec = write_probe(tmp_path, "http://127.0.0.1:9/v1", items=1)
    _refused(run_cli("compare", str(spec), "--frameworks", "native", "--judge", HUGE, "--store", str(tmp_path / "s.sqlite")),
             "--judge")
    assert not (tmp_path / "s.sqlite").exists()


def test_a_run_id_longer_than_the_limit_starts_nothing(tmp_path):
    spec = write_probe(tmp_path, "http://127.0.0.1:9/v1", items=1)
    out = run_cli("run", str(spec), "--run-id", HUGE, "--store", str(tmp_path / "s.sqlite"))
    _refused(out, "--run-id")
    assert not (tmp_path / "s.sqlite").exists()


def test_the_limit_itself_is_accepted():
    assert checked_label("a" * MAX_LABEL_CHARS, "--label") == "a" * MAX_LABEL_CHARS
    with pytest.raises(LabelTooLong, match="--label is 201 characters long"):
        checked_label("a" * (MAX_LABEL_CHARS + 1), "--label")
