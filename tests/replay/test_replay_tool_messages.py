"""Tool traffic in `testbed show-episode` and the replay app: calls as name(arguments), results tied to their call,
folded in the app until `t` unfolds them, failures marked, hostile names, arguments and results shown as marks."""

from __future__ import annotations

import re
import shutil

import pytest
from typer.testing import CliRunner

from conftest import plain
from hostile_text import FORBIDDEN, MARKS, STORED_MARKS, assert_neutralised
from testbed.cli.app import app as cli
from testbed.replay.app import ReplayApp
from testbed.replay.label_screen import LabelScreen
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.store import Store
from tool_episode import ANSWER, EPISODE, LONG_ARGUMENT, LONG_RESULT, REQUEST, RUN, USER_RESULT, USER_TURN, build_tool_store

SIZE = (200, 60)
TEXTUAL_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def tool_store(tmp_path_factory):
    """The path of `build_tool_store`'s store."""
    return build_tool_store(tmp_path_factory.mktemp("tool-replay"))


def _line_with(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


def test_show_episode_prints_calls_and_results_tied_to_their_calls(tool_store):
    out = CliRunner().invoke(cli, ["show-episode", RUN, EPISODE, "--store", str(tool_store)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    text = out.output
    call = _line_with(text, "→ get_customer_by_phone(")
    assert '→ get_customer_by_phone({"phone": "555-0100", "note": "xxx' in call and call.rstrip(" │").endswith("…)")
    assert LONG_ARGUMENT not in text, "a long argument is cut"
    assert "agent · turn 3 · 2 tool calls" in text and "user · turn 7 · 1 tool call" in text
    assert "→ toggle_airplane_mode({})" in text
    first = _line_with(text, "← call call-1")
    assert "get_customer_by_phone ← call call-1 of turn 3 · asked by assistant" in first and "ERROR" not in first
    assert "ERROR  lookup" in _line_with(text, "← call call-2 of turn 3")
    assert "toggle_airplane_mode ← call call-3 of turn 7 · asked by user" in text
    assert "unlimited-199" in text and "folded" not in text, "show-episode prints results whole"
    assert "turn 2 · user turn 1" in text and "turn 9 · user turn 2" in text and "user turn 3" not in text
    assert_neutralised(text, marks=MARKS + STORED_MARKS)


def _drawn(app: ReplayApp) -> str:
    compositor = app.screen._compositor
    written = compositor.render_full_update().render_segments(app.console)
    assert not set(TEXTUAL_CSI.sub("", written)) & FORBIDDEN, "an escape sequence other than textual's reached the terminal"
    return "\n".join("".join(segment.text for segment in strip) for strip in compositor.render_strips())


async def test_the_app_folds_tool_results_to_one_line_until_t_unfolds_them(tool_store):
    app = ReplayApp(Store(tool_store, readonly=True), RUN, EPISODE)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        result = screen.panels[4]
        folded = plain(result).strip().splitlines()
        assert len(folded) == 3, "border, one line, border"
        assert f"[{len(LONG_RESULT)} chars, folded]" in folded[1] and "unlimited-199" not in folded[1]
        assert "ERROR" in plain(screen.panels[5]) and "asked by user" in plain(screen.panels[8])
        assert_neutralised(_drawn(app), marks=("lookup␛]0;PWNED-TITLE␇", "␛[2J"))
        await pilot.press("t")
        unfolded = plain(screen.panels[4])
        assert "unlimited-199" in unfolded and len(unfolded.strip().splitlines()) > 3
        assert "folded" not in plain(screen.panels[8]) and USER_RESULT in plain(screen.panels[8])
        assert_neutralised(_drawn(app), marks=())
        await pilot.press("t")
        assert len(plain(screen.panels[4]).strip().splitlines()) == 3


async def test_labelling_shows_the_spoken_answer_and_never_offers_a_tool_call(tool_store, tmp_path):
    copy = tmp_path / "store.sqlite"
    shutil.copy(tool_store, copy)
    app = ReplayApp(Store(copy), RUN, annotator="tester")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabelScreen)
        order = screen.session.order
        assert sorted(t.turn_index for t in order) == [2, 9]
        later = next(t for t in order if t.turn_index == 9)
        assert (later.question, later.answer, later.user_turn) == (REQUEST, ANSWER, USER_TURN)
