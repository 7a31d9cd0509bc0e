"""The data behind the app: episode rows agree with the drift analysis, filters read and fail clearly, views mark turns."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console
from typer.testing import CliRunner

from testbed.analysis.drift import drift_onsets
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app as cli
from testbed.replay.catalog import RunCatalog
from testbed.replay.episode_view import episode_view
from testbed.replay.filters import EpisodeFilter, FilterError, SortState
from testbed.replay.render import turn_panel
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import Store
from testbed.store.frames import turns_df
from testbed.store.labels import labels_frame

from conftest import SECOND


def test_rows_agree_with_the_drift_analysis_for_every_judge(replay_store):
    path, run_id = replay_store
    store = Store(path, readonly=True)
    catalog = RunCatalog.load(store, run_id)
    turns = turns_df(store, run_id)
    turns = turns[turns.status == "done"]
    for who in catalog.identities:
        expected = drift_onsets(labels_frame(store, run_id, who), turns).set_index("episode_id")
        for row in catalog.rows(who):
            if row.errored:
                assert row.episode_id not in expected.index or not expected.loc[row.episode_id, "drifted"]
                continue
            onset = expected.loc[row.episode_id, "onset"]
            assert (row.onset is None and math.isnan(onset)) or row.onset == onset, (who, row.episode_id)
            assert row.user_turns == expected.loc[row.episode_id, "user_turns"]


def test_the_view_marks_onset_source_and_ordinals(replay_store):
    path, run_id = replay_store
    store = Store(path, readonly=True)
    catalog = RunCatalog.load(store, run_id)
    episode = next(e for e in catalog.episodes if e.status == "done")
    view = episode_view(store, catalog, episode, SECOND)
    assert [t.ordinal for t in view.turns] == [0, 0, 1, 0, 2, 0, 3, 0]
    onset = view.turns[view.onset_position]
    assert onset.message.turn_index == 6 and onset.source.kind == "echoes" and onset.source.turn_index == 5
    assert all(len(t.labels) == 2 for t in view.turns if t.generated), "both judges' labels on every judged turn"
    assert episode_view(store, catalog, episode, None).onset_position is None


@pytest.mark.parametrize("line, problem", [
    ("colour=red", "unknown filter field 'colour'"),
    ("t=warm", "not a number"),
    ("drifted=maybe", "not yes or no"),
    ("model=", "has no value"),
    ('"unclosed', "close the quote"),
])
def test_bad_filters_name_the_term(line, problem):
    with pytest.raises(FilterError, match=problem):
        EpisodeFilter.parse(line)


def test_filter_terms_combine(replay_store):
    path, run_id = replay_store
    store = Store(path, readonly=True)
    rows = RunCatalog.load(store, run_id).rows(SECOND)
    keep = lambda line: EpisodeFilter.parse(line).apply(rows, lambda word: {r.episode_id for r in rows})  # noqa: E731
    assert len(keep("")) == 8
    assert len(keep("label=echo")) == 7 and len(keep("label=echo !drifted")) == 0
    assert len(keep("temperature=0.7 status=yes")) == 1, "aliases: temperature is t, status is errored"
    assert len(keep("stop=max mode=INSTRUCTED")) == 7


def test_show_episode_prints_roles_labels_onset_and_errors(replay_store):
    path, run_id = replay_store
    store = Store(path, readonly=True)
    errored = next(e.key.episode_id for e in store.episodes(run_id) if e.status == "error")
    done = next(e.key.episode_id for e in store.episodes(run_id) if e.status == "done")
    runner = CliRunner()
    out = runner.invoke(cli, ["show-episode", run_id[:8], done[:6], "--judge", "failure-modes", "--store", str(path)],
                        env={"COLUMNS": "140"})
    assert out.exit_code == 0, out.output
    assert " USER " in out.output and " ASSISTANT " in out.output and "DRIFT ONSET" in out.output
    assert "echoes turn 5" in out.output and "onset at user turn 3 (turn 6)" in out.output and "second judge says" in out.output
    bad = runner.invoke(cli, ["show-episode", run_id, errored, "--store", str(path)], env={"COLUMNS": "140"})
    assert bad.exit_code == 0 and "HTTP 503 from the user model" in bad.output and " ERROR " in bad.output
    unknown = runner.invoke(cli, ["show-episode", run_id, "zzz", "--store", str(path)])
    assert unknown.exit_code == 2 and "episode 'zzz' is not in run" in unknown.output


def test_replay_refuses_clearly_outside_a_terminal_and_on_bad_arguments(replay_store):
    path, run_id = replay_store
    runner = CliRunner()
    no_tty = runner.invoke(cli, ["replay", run_id, "--store", str(path)])
    assert no_tty.exit_code == 2 and "needs a terminal" in no_tty.output and "show-episode" in no_tty.output
    no_run = runner.invoke(cli, ["replay", "--label", "ann", "--store", str(path)])
    assert no_run.exit_code == 2 and "--label needs a run" in no_run.output
    unknown = runner.invoke(cli, ["replay", "nope", "--store", str(path)])
    assert unknown.exit_code == 2 and "run 'nope' is not in the store" in unknown.output
    bad_name = runner.invoke(cli, ["replay", run_id, "--label", "a:b", "--store", str(path)])
    assert bad_name.exit_code == 2 and "annotator name" in bad_name.output


async def test_a_probe_answer_shown_perturbed_is_marked(spec_dir, store):
    scenario = load_scenario(spec_dir(items={"limit": 1}, user_modes=["instructed"], temperatures=[0.0],
                                      perturbations=["none", "truncation"]))
    answer = ScriptedBackend(lambda r: "First add the eggs, then subtract the ones she eats, then multiply by two dollars.")
    summary = await run_scenario(scenario, store, backends={"assistant": answer, "user": ScriptedBackend(lambda r: "Why two?")},
                                 show_progress=False)
    catalog = RunCatalog.load(store, summary.run_id)
    marks = {}
    for episode in catalog.episodes:
        view = episode_view(store, catalog, episode, None)
        marks[episode.key.perturbation] = [(t.message.role, t.perturbed) for t in view.turns if t.perturbed]
        if episode.key.perturbation == "truncation":
            panel = turn_panel(next(t for t in view.turns if t.perturbed))
    assert marks == {"none": [], "truncation": [("assistant", "truncation")]}
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(panel)
    assert "perturbed: truncation" in console.export_text()


def test_sorting_puts_rows_without_the_value_last_in_both_directions(replay_store):
    path, run_id = replay_store
    rows = RunCatalog.load(Store(path, readonly=True), run_id).rows(SECOND)
    for reverse in (False, True):
        ordered = SortState("onset", reverse).apply(rows)
        assert ordered[-1].onset is None and all(r.onset is not None for r in ordered[:-1])
        errors = SortState("error", reverse).apply(rows)
        assert errors[0].error == "HTTP 503 from the user model"
