"""The replay app on a 10 MB reply: the transcript and the labelling screen open with it cut, `x` or a click shows more."""

from __future__ import annotations

import shutil

import pytest
from textual.pilot import OutOfBounds

from conftest import plain
from hostile_text import assert_neutralised
from huge_text_store import HEAD_WORD, HUGE_EPISODE, HUGE_RUN, HUGE_USER_EPISODE, TAIL_WORD, build_huge_store, huge_text
from testbed.replay.app import ReplayApp, binding_rows
from testbed.replay.label_screen import LabelScreen
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.store import Store

SIZE = (160, 50)
LONG_CHARS = 30_000
"""A reply long enough to be cut, short enough for a test to lay out whole."""


@pytest.fixture(scope="module")
def huge(tmp_path_factory):
    """The path of a store whose episodes hold a 10 MB reply and a 10 MB user turn."""
    return build_huge_store(tmp_path_factory.mktemp("huge-replay"))[0]


@pytest.fixture(scope="module")
def long(tmp_path_factory):
    """The same store with 30,000-character texts."""
    return build_huge_store(tmp_path_factory.mktemp("long-replay"), LONG_CHARS)[0]


def reply_panel(app: ReplayApp) -> str:
    screen = app.screen
    assert isinstance(screen, TranscriptScreen)
    return plain(screen.panels[1])


async def test_transcript_opens_a_10_mb_reply_cut_and_x_shows_ten_times_more(huge):
    app = ReplayApp(Store(huge, readonly=True), HUGE_RUN, HUGE_EPISODE)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TranscriptScreen)
        shown = reply_panel(app)
        assert HEAD_WORD in shown and TAIL_WORD in shown and len(shown) < 100_000
        assert "9,995,606 characters left out (10,000,006 in all, 10.4 MB); x or a click shows more" in shown
        assert_neutralised(shown)
        assert ("x", "show more of long messages") in binding_rows(app.screen), "the key is in the help"
        await pilot.press("x")
        more = reply_panel(app)
        assert "9,959,606 characters left out" in more
        assert more.count("line of a huge reply") > 5 * shown.count("line of a huge reply")


async def test_a_click_on_a_cut_reply_shows_it_whole_and_x_cuts_it_again(long):
    app = ReplayApp(Store(long, readonly=True), HUGE_RUN, HUGE_EPISODE)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and "left out" in reply_panel(app)
        for _ in range(20):
            screen.query_one("#messages").scroll_to_widget(screen.panels[1], animate=False, top=True)
            await pilot.pause()
            try:
                await pilot.click(screen.panels[1], offset=(4, 2))
                break
            except OutOfBounds:
                await pilot.pause(0.05)
        else:
            pytest.fail("the cut reply never scrolled into view")
        await pilot.pause()
        whole = reply_panel(app)
        lines = huge_text(LONG_CHARS).count("line of a huge reply")
        assert "left out" not in whole and whole.count("line of a huge reply") == lines
        await pilot.press("x")
        assert "left out" in reply_panel(app), "with nothing left to show, x cuts the messages again"


async def test_labelling_opens_on_a_10_mb_answer_and_user_turn_cut(huge, tmp_path):
    copy = tmp_path / "store.sqlite"
    shutil.copy(huge, copy)
    app = ReplayApp(Store(copy), HUGE_RUN, annotator="tester")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabelScreen)
        seen = {screen.turn.episode_id}
        for _ in range(2):
            context, target = plain(screen.query_one("#context")), plain(screen.query_one("#user-turn"))
            assert len(context) + len(target) < 100_000
            assert "(10,000,006 in all, 10.4 MB); x or a click shows more" in context + target
            assert_neutralised(context + target)
            await pilot.press("k")
            seen.add(screen.turn.episode_id)
        assert seen == {HUGE_EPISODE, HUGE_USER_EPISODE}
        await pilot.press("x")
        assert "9,959,606 characters left out" in plain(screen.query_one("#context")) + plain(screen.query_one("#user-turn"))
        assert ("x", "show more of long texts") in binding_rows(screen)
