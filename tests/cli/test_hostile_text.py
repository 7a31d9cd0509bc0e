"""Every command's view of a store full of escape sequences shows them as marks and never prints them raw."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hostile_text import (BUILT_MARKS, FORBIDDEN, HOSTILE, HOSTILE_MODEL, MARKS, MODEL_MARKS, STORED_MARKS, WIRE_RUN,
                          assert_neutralised)
from hostile_text import build_hostile_store, hostile_backends, hostile_spec
from testbed.backends.base import BackendError
from testbed.cli.app import app
from testbed.store.text import storable

runner = CliRunner()

def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[str, str]:
    """(store path, run id) of `build_hostile_store`."""
    path, run_id = build_hostile_store(tmp_path_factory.mktemp("hostile"))
    return str(path), run_id


def _episodes(db: str, run_id: str) -> dict[str, str]:
    from testbed.store import Store

    store = Store(db, readonly=True)
    try:
        return {e.status: e.key.episode_id for e in store.episodes(run_id)}
    finally:
        store.close()


def test_show_episode_prints_the_transcript_and_the_error_as_marks(hostile):
    db, run_id = hostile
    for status, episode in _episodes(db, run_id).items():
        out = invoke("show-episode", run_id, episode, "--store", db)
        assert out.exit_code == 0, out.output
        assert_neutralised(out.output, marks=MARKS + STORED_MARKS + MODEL_MARKS)
        assert status != "error" or "HTTP 503 from the user model: ␛]0;PWNED-TITLE␇" in out.output


def test_report_table_names_the_models_and_the_errors_as_marks(hostile):
    db, run_id = hostile
    out = invoke("report", run_id, "--store", db)
    assert out.exit_code == 0, out.output
    assert_neutralised(out.output, marks=MARKS + MODEL_MARKS)
    assert "1 episode(s) failed: HTTP 503 from the user model: ␛]0;PWNED-TITLE␇" in out.output


@pytest.mark.parametrize("fmt", ["markdown", "csv"])
def test_report_markdown_and_csv_are_neutralised(hostile, fmt):
    db, run_id = hostile
    out = invoke("report", run_id, "--store", db, "-f", fmt)
    assert out.exit_code == 0, out.output
    assert_neutralised(out.stdout, marks=("␛]0;MODEL-TITLE␇<U+202E>",))


def test_report_json_escapes_and_keeps_the_raw_name(hostile):
    db, run_id = hostile
    out = invoke("report", run_id, "--store", db, "-f", "json")
    assert out.exit_code == 0 and not set(out.stdout) & FORBIDDEN
    assert {r["assistant_model"] for r in json.loads(out.stdout)} == {HOSTILE_MODEL}


def test_runs_lists_a_hostile_scenario_name_as_marks(hostile):
    db, _ = hostile
    out = invoke("runs", "--store", db)
    assert out.exit_code == 0, out.output
    assert_neutralised(out.output, marks=("scenario␛]0;PWNED-TITLE",))


def test_wire_shows_requests_replies_and_error_bodies_as_marks(hostile):
    db, _ = hostile
    out = invoke("wire", WIRE_RUN, "wire-episode", "--store", db)
    assert out.exit_code == 0, out.output
    assert_neutralised(out.output)
    assert "<html>␛]0;PWNED-TITLE" in out.output and "n␛]0;PWNED-TITLE" in out.output
    raw = invoke("wire", WIRE_RUN, "wire-episode", "--store", db, "-f", "json")
    assert raw.exit_code == 0 and not set(raw.stdout) & FORBIDDEN
    assert json.loads(raw.stdout)[0]["response"] == f"<html>{HOSTILE}</html>", "JSON keeps the text exactly, escaped"


def test_export_card_is_neutralised_and_the_rows_are_verbatim(hostile, tmp_path):
    from testbed.judges.taxonomy import taxonomy

    db, run_id = hostile
    labels = [arg for label in taxonomy().labels for arg in ("--label", label)]
    out = invoke("export", run_id, "--as", "sft", "--store", db, "--out", str(tmp_path), "--user-model", HOSTILE_MODEL, *labels)
    assert out.exit_code == 0, out.output
    assert_neutralised(out.output, marks=())
    card = next(tmp_path.glob("*.card.md")).read_text(encoding="utf-8")
    assert_neutralised(card, marks=("<U+202E>",))
    rows = [json.loads(line) for line in next(tmp_path.glob("*.jsonl")).read_text(encoding="utf-8").splitlines()]
    assert rows and all(storable(HOSTILE) in r["messages"][-1]["content"] for r in rows), "training rows keep the stored text"


def test_show_prints_the_resolved_spec_with_marks(tmp_path):
    out = invoke("show", str(hostile_spec(tmp_path)))
    assert out.exit_code == 0, out.output
    assert_neutralised(out.stdout, marks=("<U+202E>",))


def _patched_run(monkeypatch, failure: Exception | None = None) -> None:
    """`testbed run` with the corpus-writing scripted agents (or a run that stops with `failure`)."""
    import testbed.running.runner

    real = testbed.running.runner.run_scenario

    async def run_scenario(scenario, db, **kwargs):
        if failure is not None:
            raise failure
        return await real(scenario, db, backends=hostile_backends(), **kwargs)

    monkeypatch.setattr(testbed.running.runner, "run_scenario", run_scenario)


def test_run_summary_and_its_report_are_neutralised(tmp_path, monkeypatch):
    _patched_run(monkeypatch)
    out = invoke("run", str(hostile_spec(tmp_path)), "--store", str(tmp_path / "s.sqlite"), "-q", "--run-id", "hostile-run")
    assert out.exit_code == 1, out.output
    assert_neutralised(out.output, marks=MARKS + MODEL_MARKS)
    assert "run hostile-run" in out.output and "2/3 episodes done, 1 errors" in out.output, "the errored episode: exit 1"


def test_a_run_id_with_control_characters_is_refused_before_anything_starts(tmp_path):
    out = invoke("run", str(hostile_spec(tmp_path)), "--store", str(tmp_path / "s.sqlite"), "--run-id", "run" + HOSTILE)
    assert out.exit_code == 2 and "holds control characters" in out.stderr
    assert_neutralised(out.stderr, marks=())
    assert not (tmp_path / "s.sqlite").exists()


def test_a_server_error_that_stops_the_run_fails_with_marks(tmp_path, monkeypatch):
    _patched_run(monkeypatch, BackendError(f"HTTP 401 from http://x/v1: {HOSTILE}"))
    out = invoke("run", str(hostile_spec(tmp_path)), "--store", str(tmp_path / "s.sqlite"), "-q")
    assert out.exit_code == 2
    assert_neutralised(out.stderr, marks=MARKS + BUILT_MARKS)
    assert out.stderr.startswith("error: HTTP 401 from http://x/v1: ␛]0;PWNED-TITLE␇")


def test_fail_and_say_show_marks(capsys):
    import typer

    from testbed.cli.shell import fail, say

    say("plain ", (f"styled{HOSTILE}", "bold"), f" tail{HOSTILE}")
    with pytest.raises(typer.Exit):
        fail(f"reason {HOSTILE}")
    captured = capsys.readouterr()
    assert_neutralised(captured.out, marks=MARKS + BUILT_MARKS)
    assert_neutralised(captured.err, marks=MARKS + BUILT_MARKS)
    assert "styled␛]0;PWNED-TITLE" in captured.out and "tail␛]0;PWNED-TITLE" in captured.out


def test_graph_lists_what_it_drew_with_marks_only(hostile, tmp_path):
    db, run_id = hostile
    out = invoke("graph", run_id, "--store", db, "--out", str(tmp_path / "g"))
    assert out.exit_code == 0, out.output
    assert "survival.png" in out.output and not FORBIDDEN & set(out.output)


def test_import_labels_names_a_hostile_episode_and_label_as_marks(hostile, tmp_path):
    db, run_id = hostile
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"episode_id": HOSTILE, "turn_index": 2, "label": "genuine_followup"}) + "\n")
    out = invoke("import-labels", run_id, str(labels), "--annotator", "ann", "--store", db)
    assert out.exit_code == 2, out.output
    assert "has no user turn" in out.output
    assert_neutralised(out.output)
    labels.write_text(json.dumps({"episode_id": "e", "turn_index": 2, "label": HOSTILE}) + "\n")
    out = invoke("import-labels", run_id, str(labels), "--annotator", "ann", "--store", db)
    assert out.exit_code == 2 and not FORBIDDEN & set(out.output), out.output
