"""`testbed show-episode` and `testbed wire` on a 10 MB reply: printed in part with its size, `--full` prints it whole."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hostile_text import assert_neutralised
from huge_text_store import HEAD_WORD, HUGE_EPISODE, HUGE_RUN, TAIL_WORD, build_huge_store, huge_text
from testbed.cli.app import app

LONG_CHARS = 30_000
"""A message long enough to be cut, short enough to print whole in a test."""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def huge(tmp_path_factory) -> str:
    """The path of a store whose one episode holds a 10 MB reply, in its transcript and in its wire log."""
    return str(build_huge_store(tmp_path_factory.mktemp("huge-cli"))[0])


@pytest.fixture(scope="module")
def long(tmp_path_factory) -> str:
    """The same store with a 30,000-character reply."""
    return str(build_huge_store(tmp_path_factory.mktemp("long-cli"), LONG_CHARS)[0])


def test_show_episode_prints_a_10_mb_reply_in_part_with_its_size(huge):
    out = invoke("show-episode", HUGE_RUN, HUGE_EPISODE, "--store", huge)
    assert out.exit_code == 0, out.output
    assert len(out.output) < 100_000, f"{len(out.output):,} characters printed for one cut reply"
    assert HEAD_WORD in out.output and TAIL_WORD in out.output and "Because 6 sevens are 42." in out.output
    assert "characters left out (10,000,006 in all, 10.4 MB); --full shows it whole" in out.output
    assert_neutralised(out.output)


def test_show_episode_full_prints_the_reply_whole(long):
    cut = invoke("show-episode", HUGE_RUN, HUGE_EPISODE, "--store", long)
    out = invoke("show-episode", HUGE_RUN, HUGE_EPISODE, "--store", long, "--full")
    assert out.exit_code == 0, out.output
    lines = huge_text(LONG_CHARS).count("line of a huge reply")
    assert "left out" not in out.output and out.output.count("line of a huge reply") == lines
    assert cut.output.count("line of a huge reply") < lines / 5 and "left out" in cut.output
    assert_neutralised(out.output)


def test_wire_prints_10_mb_bodies_in_part_with_their_size(huge):
    out = invoke("wire", HUGE_RUN, HUGE_EPISODE, "--store", huge)
    assert out.exit_code == 0, out.output
    assert len(out.output) < 200_000, f"{len(out.output):,} characters printed for two requests"
    note = "characters left out (10,000,000 in all, 10.4 MB); --full shows it whole"
    assert out.output.count(note) == 2, "the reply of the first request and the history of the second are both cut"
    assert out.output.count(TAIL_WORD) == 2 and "2 request(s)" in out.output
    assert_neutralised(out.output)


def test_wire_full_prints_every_body_whole_and_json_keeps_them_whole(long):
    out = invoke("wire", HUGE_RUN, HUGE_EPISODE, "--store", long, "--full")
    assert out.exit_code == 0, out.output
    lines = huge_text(LONG_CHARS).count("line of a huge reply")
    assert "left out" not in out.output and out.output.count("line of a huge reply") == 2 * lines
    raw = json.loads(invoke("wire", HUGE_RUN, HUGE_EPISODE, "--store", long, "-f", "json").output)
    assert raw[0]["response"]["choices"][0]["message"]["content"].count("line of a huge reply") == lines
