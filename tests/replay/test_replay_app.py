"""The replay app driven with textual's Pilot on a scripted run: open, filter, sort, step, play, jump, help."""

from __future__ import annotations

from textual.widgets import DataTable

from testbed.replay.app import HelpScreen, ReplayApp, RunsScreen, binding_rows
from testbed.replay.episodes_screen import EpisodesScreen
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.store import Store

from conftest import SECOND

SIZE = (120, 40)


def table(app: ReplayApp) -> DataTable:
    return app.screen.query_one(DataTable)


async def test_runs_list_opens_a_run_and_filters_its_episodes(replay_store):
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True))
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, RunsScreen) and table(app).row_count == 1
        await pilot.press("enter")
        assert isinstance(app.screen, EpisodesScreen) and table(app).row_count == 8
        await pilot.press("e")
        assert table(app).row_count == 1 and app.screen.shown[0].errored
        await pilot.press("e")
        assert table(app).row_count == 7 and not any(r.errored for r in app.screen.shown)
        await pilot.press("x", "slash", *"t=0.7 ECHO", "enter")
        shown = app.screen.shown
        assert len(shown) == 3 and all(r.temperature == 0.7 and r.status == "done" for r in shown), "the errored one never echoed"
        await pilot.press("slash", "ctrl+a", "ctrl+k", *"foo=bar", "enter")
        assert app.screen.filter.text == "t=0.7 ECHO", "a bad filter is reported and the old one stays"
        assert len(app.screen.shown) == 3


async def test_judge_cycling_sorting_and_constant_columns(replay_store):
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, EpisodesScreen) and screen.judge.judge == "local"
        await pilot.press("j")
        assert screen.judge == SECOND
        assert {r.top_label for r in screen.shown if not r.errored} == {"genuine_followup"}
        assert "assistant_model" not in [str(c.key.value) for c in table(app).columns.values()], "constant columns sit in the header"
        await pilot.press("c")
        assert "assistant_model" in [str(c.key.value) for c in table(app).columns.values()]
        screen.sort.column = None
        await pilot.press("s", "s")
        assert screen.sort.column == "item_id"
        items = [r.item_id for r in screen.shown]
        assert items == sorted(items)
        await pilot.press("S")
        assert [r.item_id for r in screen.shown] == sorted(items, reverse=True)


async def test_transcript_steps_plays_and_jumps_to_the_onset(replay_store):
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d", "enter")
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        n = len(screen.view.turns)
        assert screen.cursor == n - 1 and all(p.display for p in screen.panels)
        await pilot.press("home")
        assert screen.cursor == 0 and [p.display for p in screen.panels] == [True] + [False] * (n - 1)
        await pilot.press("right", "right")
        assert screen.cursor == 2 and sum(p.display for p in screen.panels) == 3
        await pilot.press("left")
        assert screen.cursor == 1
        await pilot.press("o")
        onset = screen.view.turns[screen.cursor]
        assert onset.onset and onset.message.turn_index == 6 and onset.source is not None and onset.source.kind == "echoes"
        await pilot.press("home", *["plus"] * 5, "space")
        assert screen.timer is not None
        await pilot.pause(0.6)
        assert screen.cursor >= 2, "playing at 8 turns/s shows turns one by one"
        await pilot.press("space")
        assert screen.timer is None
        first = screen.view.episode.key.episode_id
        await pilot.press("right_square_bracket")
        assert screen.index == 1 and screen.view.episode.key.episode_id != first
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert screen.index == 0, "there is no episode before the first: it stays"
        await pilot.press("escape")
        assert isinstance(app.screen, EpisodesScreen)


async def test_an_episode_given_on_the_command_line_opens_directly(replay_store):
    path, run_id = replay_store
    store = Store(path, readonly=True)
    errored = next(e.key.episode_id for e in store.episodes(run_id) if e.status == "error")
    app = ReplayApp(store, run_id, errored)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.view.episode.error_reason == "HTTP 503 from the user model"
        await pilot.press("o")
        assert screen.cursor == len(screen.view.turns) - 1, "no onset: the cursor stays and a warning says so"


async def test_help_lists_every_key_of_the_screen(replay_store):
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        rows = binding_rows(app.screen)
        assert {"→", "←", "space", "o", "]", "[", "home", "end", "+", "-", "?", "q"} <= {k for k, _ in rows}
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = str(app.screen.query_one("Static").render())
        assert all(what in shown for _, what in rows)
        await pilot.press("z")
        assert isinstance(app.screen, TranscriptScreen)


async def test_the_table_loads_rows_a_page_at_a_time(replay_store, monkeypatch):
    import testbed.replay.episodes_screen as episodes_screen

    monkeypatch.setattr(episodes_screen, "PAGE", 3)
    monkeypatch.setattr(episodes_screen, "LOAD_AHEAD", 1)
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert table(app).row_count == 3 and len(screen.shown) == 8
        await pilot.press("down", "down")
        assert table(app).row_count == 6, "the cursor near the last loaded row brings the next page"
        await pilot.press(*["down"] * 6)
        assert table(app).row_count == 8
        await pilot.press("e")
        assert table(app).row_count == 1


async def test_transcript_keys_work_when_the_messages_have_focus(replay_store):
    path, run_id = replay_store
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        screen = app.screen
        screen.query_one("#messages").focus()
        await pilot.press("home")
        assert screen.cursor == 0
        await pilot.press("right", "end")
        assert screen.cursor == len(screen.view.turns) - 1
