"""The replay app on a store full of escape sequences: every screen draws them as marks, none reaches the terminal raw."""

from __future__ import annotations

import re
import shutil

import pytest

from hostile_text import FORBIDDEN, MARKS, STORED_MARKS, assert_neutralised, build_hostile_store
from testbed.replay.app import ReplayApp, RunsScreen
from testbed.replay.episodes_screen import EpisodesScreen
from testbed.replay.label_screen import LabelScreen
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.store import Store

SIZE = (220, 80)
TEXTUAL_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""Textual's own cursor moves and colours, the only escape sequences the app may write."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """(store path, run id) of `build_hostile_store`."""
    return build_hostile_store(tmp_path_factory.mktemp("hostile-replay"))


def drawn(app: ReplayApp) -> str:
    """The text of every cell the screen draws now; and, checked here, the bytes a terminal would get hold no
    escape sequence but textual's own."""
    compositor = app.screen._compositor
    written = compositor.render_full_update().render_segments(app.console)
    assert not set(TEXTUAL_CSI.sub("", written)) & FORBIDDEN, "an escape sequence other than textual's reached the terminal"
    return "\n".join("".join(segment.text for segment in strip) for strip in compositor.render_strips())


async def test_runs_list_shows_a_hostile_scenario_as_marks(hostile):
    path, _ = hostile
    app = ReplayApp(Store(path, readonly=True))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        assert_neutralised(drawn(app), marks=("scenario␛]0;PWNED-TITLE␇",))


async def test_errored_episodes_list_shows_the_reason_and_model_names_as_marks(hostile):
    path, run_id = hostile
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        screen = app.screen
        assert isinstance(screen, EpisodesScreen) and len(screen.shown) == 1 and screen.shown[0].errored
        assert_neutralised(drawn(app), marks=("HTTP 503 from the user model: ␛]0;PWNED-", "model␛]0;MODEL-TITLE␇<U+202E>"))


@pytest.mark.parametrize("errored", [False, True])
async def test_transcript_shows_messages_and_the_error_as_marks(hostile, errored):
    path, run_id = hostile
    app = ReplayApp(Store(path, readonly=True), run_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e", *(["e"] if not errored else []), "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and (screen.view.episode.status == "error") == errored
        shown = drawn(app)
        assert_neutralised(shown, marks=MARKS + STORED_MARKS)
        assert not errored or "error: HTTP 503 from the user model: ␛]0;PWNED-TITLE␇" in shown


async def test_labelling_shows_the_turn_its_request_and_earlier_messages_as_marks(hostile, tmp_path):
    path, run_id = hostile
    copy = tmp_path / "store.sqlite"
    shutil.copy(path, copy)
    app = ReplayApp(Store(copy), run_id, annotator="tester")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, LabelScreen)
        assert_neutralised(drawn(app), marks=MARKS + STORED_MARKS)
        screen = app.screen
        while screen.turn is not None and not screen.turn.context:
            await pilot.press("k")
        assert screen.turn is not None and any("PWNED" in e.text for e in screen.turn.context), "a later turn with hostile context"
        shown = drawn(app)
        assert "earlier" in shown
        assert_neutralised(shown, marks=MARKS + STORED_MARKS)

