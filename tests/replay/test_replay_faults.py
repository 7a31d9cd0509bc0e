"""Simulated-user faults in the replay app, on a τ² run made with scripted models: one episode whose user invents a
ticket code and stops with the work undone, one clean episode. The catalog gives each its fault kinds (stored when the
run finished, so read without τ²), the filter finds them, the table shows them, and the transcript marks each faulted
user turn with its evidence, drawn literally."""

from __future__ import annotations

import asyncio
import io
import re
import shutil
import threading
from dataclasses import replace

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from rich.console import Console  # noqa: E402
from textual.widgets import DataTable  # noqa: E402

from tau2_faulty_run import DONE, INVENTED, STOPPED, faulty_run  # noqa: E402
from hostile_text import FORBIDDEN  # noqa: E402
from testbed.analysis.tau2 import stored_faults  # noqa: E402
from testbed.analysis.tau2.stored_faults import FAULT_NAMES, RULES, Tau2FaultDetector  # noqa: E402
from testbed.replay.app import HelpScreen, ReplayApp  # noqa: E402
from testbed.replay.catalog import FAULTS_PENDING, RunCatalog  # noqa: E402
from testbed.replay.episode_view import episode_view  # noqa: E402
from testbed.replay.episodes_screen import EpisodesScreen  # noqa: E402
from testbed.replay.filters import EpisodeFilter, FilterError  # noqa: E402
from testbed.replay.render import SUMMARY_TURNS, episode_header, print_episode, turn_panel  # noqa: E402
from testbed.replay.transcript_screen import TranscriptScreen  # noqa: E402
from testbed.scenarios.tau2 import domains  # noqa: E402
from testbed.scenarios.tau2.user_faults import FAULT_KINDS  # noqa: E402
from testbed.store import EpisodeKey, EpisodeOutcome, Store  # noqa: E402
from testbed.store.labels import JudgeIdentity, write_labels  # noqa: E402
from testbed.store.records import LabelRow  # noqa: E402
from testbed.store.turn_reviews import TurnReviewRow  # noqa: E402
from testbed.store.user_faults import FaultRow, faults_df  # noqa: E402
from testbed.transcript import Message  # noqa: E402

SIZE = (120, 40)
WHO = JudgeIdentity("local", "v1")
TEXTUAL_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def tau2_store(tmp_path_factory):
    """(store path, run id) of a τ² mock-domain run of the two scripted episodes."""
    folder = tmp_path_factory.mktemp("replay-tau2")
    path = folder / "store.sqlite"
    store = Store(path)
    run_id, _ = asyncio.run(faulty_run(folder, store))
    store.close()
    return path, run_id


def by_item(rows) -> dict:
    return {r.item_id: r for r in rows}


def user_turns(store: Store, run_id: str, item: str) -> list[int]:
    episode = next(e for e in store.episodes(run_id) if e.key.item_id == item)
    return [m.turn_index for m in store.messages(run_id, episode.key.episode_id) if m.role == "user" and m.spoken]


def drawn(app: ReplayApp) -> str:
    """The text of every cell on screen; the bytes a terminal would get hold no escape sequence but textual's own."""
    compositor = app.screen._compositor
    written = compositor.render_full_update().render_segments(app.console)
    assert not set(TEXTUAL_CSI.sub("", written)) & FORBIDDEN, "an escape sequence other than textual's reached the terminal"
    return "\n".join("".join(segment.text for segment in strip) for strip in compositor.render_strips())


async def faults_read(app: ReplayApp, pilot) -> None:
    """Wait until the episode table's background read of the user faults has put them on screen."""
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_the_short_names_cover_every_fault_kind_in_order():
    assert tuple(FAULT_NAMES) == FAULT_KINDS
    assert all(short in kind for kind, short in FAULT_NAMES.items()), "a short name finds its kind as a filter value"


def test_the_catalog_gives_each_tau2_episode_its_fault_kinds(tau2_store):
    path, run_id = tau2_store
    store = Store(path, readonly=True)
    catalog = RunCatalog.load(store, run_id)
    assert catalog.faults_detected and catalog.fault_problem == ""
    rows = by_item(catalog.rows(None))
    assert rows[STOPPED].faults == ("premature_stop", "invented_fact") and rows[STOPPED].fault_names == "premature, invented"
    assert rows[DONE].faults == () and not rows[DONE].faulted and rows[STOPPED].faulted
    first, last = user_turns(store, run_id, STOPPED)
    found = [(f.turn_index, f.kind, f.evidence) for f in catalog.episode_faults(rows[STOPPED].episode_id, None)]
    assert found == [(first, "invented_fact", INVENTED), (last, "premature_stop", "undone: create_task")]


def test_a_judges_drift_label_on_a_tau2_user_turn_is_a_role_drift_fault(tau2_store, tmp_path):
    path, run_id = tau2_store
    copy = tmp_path / "store.sqlite"
    shutil.copy(path, copy)
    store = Store(copy)
    done = by_item(RunCatalog.load(store, run_id).rows(None))[DONE].episode_id
    first, last = user_turns(store, run_id, DONE)
    write_labels(store, run_id, WHO, [LabelRow(done, first, "scored", "genuine_followup", True),
                                      LabelRow(done, last, "scored", "echo_assistant", False)])
    catalog = RunCatalog.load(store, run_id)
    assert by_item(catalog.rows(WHO))[DONE].faults == ("role_drift",)
    assert by_item(catalog.rows(None))[DONE].faults == (), "without a judge there is no drift"
    view = episode_view(store, catalog, catalog.episode(done), WHO)
    assert [(t.message.turn_index, [(f.kind, f.evidence) for f in t.faults]) for t in view.turns if t.faults] == [
        (last, [("role_drift", "echo_assistant")])]


def test_a_run_of_another_kind_has_no_faults_and_never_reads_them(replay_store, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("faults were read for a run that is not τ²")

    monkeypatch.setattr(Tau2FaultDetector, "read", refuse)
    path, run_id = replay_store
    catalog = RunCatalog.load(Store(path, readonly=True), run_id)
    assert not catalog.faults_detected and all(r.faults == () for r in catalog.rows(None))
    assert catalog.episode_faults(catalog.episodes[0].key.episode_id, None) == []


def test_the_faults_stored_when_the_run_finished_are_read_without_tau2(tau2_store, monkeypatch):
    path, run_id = tau2_store
    store = Store(path, readonly=True)
    assert set(faults_df(store, run_id).kind) == {"premature_stop", "invented_fact"}, "the run loop stored them"
    monkeypatch.setattr(domains, "tau2_installed", lambda: False)
    catalog = RunCatalog.load(store, run_id)
    assert catalog.fault_problem == "" and by_item(catalog.rows(None))[STOPPED].faults == ("premature_stop", "invented_fact")


def test_without_tau2_or_with_a_broken_one_a_run_without_stored_faults_opens_with_the_reason(tau2_store, tmp_path, monkeypatch):
    path, run_id = tau2_store
    copy = tmp_path / "store.sqlite"
    shutil.copy(path, copy)
    with Store(copy).conn as conn:
        conn.execute("DELETE FROM user_faults")
        conn.execute("DELETE FROM user_fault_checks")
    store = Store(copy, readonly=True)
    monkeypatch.setattr(domains, "tau2_installed", lambda: False)
    catalog = RunCatalog.load(store, run_id)
    assert "not installed" in catalog.fault_problem and f"testbed judge {run_id}" in catalog.fault_problem
    assert all(r.faults == () for r in catalog.rows(None))
    monkeypatch.undo()
    assert by_item(RunCatalog.load(store, run_id).rows(None))[STOPPED].faults == ("premature_stop", "invented_fact"), \
        "with τ² installed, faults not stored are detected on reading"

    def broken(*args, **kwargs):
        raise OSError("domain data missing")

    monkeypatch.setattr(stored_faults, "run_faults", broken)
    catalog = RunCatalog.load(store, run_id)
    assert catalog.fault_problem == "user faults could not be read: OSError: domain data missing"
    assert all(r.faults == () for r in catalog.rows(None))


def test_an_episode_whose_task_tau2_lacks_has_no_faults(store):
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=2)
    opening = [Message("assistant", "Hi!", "tau2", 0), Message("user", "My code is QQ12WW.", "u", 1)]
    for eid, item in (("e0", "no_such_task"), ("e1", STOPPED)):
        key = EpisodeKey(eid, item, "tau2-mock", "a", "m-a", "u", "m-u", "instructed", 1.0, 0, "none")
        store.write_episode("r", EpisodeOutcome(key, opening, "done", "user_stop", None, 0.0))
    store.commit()
    rows = {r.episode_id: r for r in RunCatalog.load(store, "r").rows(None)}
    assert rows["e0"].faults == () and rows["e1"].faults == ("premature_stop", "invented_fact")


def test_fault_terms_keep_the_faulted_episode_and_drop_the_clean_one(tau2_store):
    path, run_id = tau2_store
    rows = RunCatalog.load(Store(path, readonly=True), run_id).rows(None)
    kept = lambda line: sorted(r.item_id for r in EpisodeFilter.parse(line).apply(rows, lambda word: set()))  # noqa: E731
    assert kept("fault=invented") == [STOPPED] and kept("fault=PREMATURE_STOP") == [STOPPED]
    assert kept("faults=premature") == [STOPPED], "faults is another name for fault"
    assert kept("fault=early") == [] and kept("fault=invented !faulted") == []
    assert kept("faulted") == [STOPPED] and kept("!faulted") == [DONE] and kept("faulted=no") == [DONE]
    assert kept("") == sorted([STOPPED, DONE])


@pytest.mark.parametrize("line, problem", [
    ("fault=colour", "part of no fault kind; kinds: premature_stop"),
    ("faulted=maybe", "not yes or no"),
    ("fault=", "has no value"),
])
def test_a_bad_fault_term_fails_when_the_line_is_read(line, problem):
    with pytest.raises(FilterError, match=problem):
        EpisodeFilter.parse(line)


async def test_the_table_shows_faults_and_the_transcript_marks_and_jumps_to_each_faulted_turn(tau2_store):
    path, run_id = tau2_store
    store = Store(path, readonly=True)
    first, last = user_turns(store, run_id, STOPPED)
    app = ReplayApp(store, run_id)
    async with app.run_test(size=SIZE) as pilot:
        await faults_read(app, pilot)
        screen = app.screen
        assert isinstance(screen, EpisodesScreen)
        table = screen.query_one(DataTable)
        assert "faults" in [str(c.key.value) for c in table.columns.values()]
        assert "premature, invented" in drawn(app) and "user faults 1" in drawn(app)
        await pilot.press("f")
        assert [r.item_id for r in screen.shown] == [STOPPED] and screen.filter.text == "faulted"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("Static").render())
        assert "fault" in help_text and "faulted" in help_text and "invented" in help_text
        await pilot.press("z", "enter")
        transcript = app.screen
        assert isinstance(transcript, TranscriptScreen)
        shown = drawn(app)
        assert f"hallucination · by {RULES}  (invented_fact)  {INVENTED}" in shown
        assert f"premature_termination · by {RULES}  (premature_stop)  undone: create_task" in shown
        assert f"user faults: invented on turn {first}; premature on turn {last}" in shown
        await pilot.press("home", "f")
        assert transcript.view.turns[transcript.cursor].message.turn_index == first
        await pilot.press("f")
        assert transcript.view.turns[transcript.cursor].message.turn_index == last
        await pilot.press("f")
        assert transcript.view.turns[transcript.cursor].message.turn_index == first, "from the last fault back to the first"


async def test_a_clean_episode_says_so_and_f_leaves_the_cursor(tau2_store):
    path, run_id = tau2_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        await faults_read(app, pilot)
        await pilot.press("f", "f", "enter")
        transcript = app.screen
        assert isinstance(transcript, TranscriptScreen) and transcript.view.episode.key.item_id == DONE
        assert "user faults: none" in drawn(app)
        end = transcript.cursor
        await pilot.press("f")
        assert transcript.cursor == end


async def test_a_dialogue_run_has_no_faults_column(replay_store):
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert not app.workers, "nothing is read in the background for a dialogue run"
        await pilot.press("c")
        assert "faults" not in [str(c.key.value) for c in screen.query_one(DataTable).columns.values()]
        await pilot.press("f")
        assert screen.filter.text == "", "f does nothing on a run without faults"


async def test_the_table_is_usable_while_the_faults_are_read_and_fills_in_when_they_arrive(tau2_store, monkeypatch):
    path, run_id = tau2_store
    real, release = Tau2FaultDetector.read, threading.Event()

    def slow(self, store, run):
        assert release.wait(10), "the test never released the read"
        return real(self, store, run)

    monkeypatch.setattr(Tau2FaultDetector, "read", slow)
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await pilot.press("down")
        assert screen.query_one(DataTable).row_count == 2 and FAULTS_PENDING in drawn(app)
        assert screen.catalog.fault_problem == FAULTS_PENDING and not any(r.faulted for r in screen.rows)
        at = screen.shown[1].episode_id
        await pilot.press("enter")
        assert isinstance(app.screen, TranscriptScreen) and FAULTS_PENDING in drawn(app)
        await pilot.press("escape")
        release.set()
        await faults_read(app, pilot)
        assert screen.catalog.fault_problem == "" and "premature, invented" in drawn(app)
        assert screen.shown[screen.query_one(DataTable).cursor_row].episode_id == at, "the cursor stays on its episode"


HOSTILE = "[bold]x[/] [link=http://e.vil]y[/link] \x1b]0;PWNED\x07\x1b[2J\u202eok"


async def test_hostile_evidence_is_drawn_literally(tau2_store, monkeypatch):
    path, run_id = tau2_store
    first, _ = user_turns(Store(path, readonly=True), run_id, STOPPED)
    real = Tau2FaultDetector.read

    def hostile(self, store, run):
        rows, problem = real(self, store, run)
        return [*rows, FaultRow(rows[0].episode_id, first, "[red]kind[/]\x1b[31m", HOSTILE)], problem

    monkeypatch.setattr(Tau2FaultDetector, "read", hostile)
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=(160, 50)) as pilot:
        await faults_read(app, pilot)
        await pilot.press("f", "enter", "home", "f")
        assert isinstance(app.screen, TranscriptScreen)
        shown = drawn(app)
        assert "[bold]x[/] [link=http://e.vil]y[/link] ␛]0;PWNED␇␛[2J<U+202E>ok" in shown
        assert "[red]kind[/]␛[31m" in shown


def test_the_panel_prints_the_fault_and_its_evidence_for_a_pipe(tau2_store):
    path, run_id = tau2_store
    store = Store(path, readonly=True)
    catalog = RunCatalog.load(store, run_id)
    stopped = by_item(catalog.rows(None))[STOPPED].episode_id
    view = episode_view(store, catalog, catalog.episode(stopped), None)
    console = Console(width=120, record=True, file=io.StringIO())
    for turn in view.turns:
        console.print(turn_panel(turn))
    printed = console.export_text()
    assert printed.count("⚑") == 2 and f"⚑  hallucination · by {RULES}  (invented_fact)  {INVENTED}" in printed


async def test_show_episode_marks_each_detectors_tags_severity_and_identity(tmp_path, store):
    """The rules' flags carry their τ² tag and the rules' identity; a reviewer's tagged turn its tags, severity and identity."""
    run_id, _ = await faulty_run(tmp_path, store)
    reviewer = JudgeIdentity("user-review", "user-review-1", "rev-model")
    catalog = RunCatalog.load(store, run_id)
    stopped = by_item(catalog.rows(None))[STOPPED].episode_id
    first, _ = user_turns(store, run_id, STOPPED)
    store.write_turn_reviews(run_id, reviewer, [TurnReviewRow(stopped, first, ("hallucination", "other"), "critical_hindered", "made up")])
    catalog = RunCatalog.load(store, run_id)
    view = episode_view(store, catalog, catalog.episode(stopped), None)
    console = Console(width=160, record=True, file=io.StringIO())
    print_episode(view, console)
    printed = console.export_text()
    assert f"⚑  hallucination · by {RULES}  (invented_fact)  {INVENTED}" in printed
    assert f"⚑  hallucination, other · critical_hindered · by {reviewer}  made up" in printed
    marks = [m for t in view.turns for m in t.marks]
    assert [(m.tags, m.severity, m.detector) for m in marks if m.severity] == [(("hallucination", "other"), "critical_hindered", str(reviewer))]


def test_the_header_lists_a_few_turns_of_each_fault_kind_and_counts_the_rest(tau2_store):
    path, run_id = tau2_store
    store = Store(path, readonly=True)
    catalog = RunCatalog.load(store, run_id)
    view = episode_view(store, catalog, catalog.episode(by_item(catalog.rows(None))[STOPPED].episode_id), None)
    eid = view.episode.key.episode_id
    every = [replace(t, faults=(FaultRow(eid, t.message.turn_index, "role_drift", "echo_assistant"),)) for t in view.turns]
    header = episode_header(replace(view, turns=tuple(every))).plain
    turns = [t.message.turn_index for t in view.turns]
    assert len(turns) > SUMMARY_TURNS
    assert f"user faults: drift on turns {', '.join(map(str, turns[:SUMMARY_TURNS]))} … ({len(turns)} turns)" in header
