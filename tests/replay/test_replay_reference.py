"""The human reference under a simulated user's turn: the replay and `testbed show-episode` show what the real user
wrote after the same answer, marked as the reference, neutralised like every other message."""

from __future__ import annotations

import dataclasses
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from helpers import REPO, write_yaml
from hostile_text import FORBIDDEN
from synthetic_chats import REPLIES, chats_file, conversation  # noqa: F401
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app as cli
from testbed.replay.app import ReplayApp
from testbed.replay.render import reference_block
from testbed.replay.transcript_screen import TranscriptScreen
from testbed.running.runner import run_scenario
from testbed.scenarios import human_reference
from testbed.scenarios.human_reference import HUMAN_MODE, REAL_USER, WEAK_HUMAN_MODEL
from testbed.specs.loader import load_scenario
from testbed.store import Store
from testbed.store.references import ReferenceTurn, reference_turns
from testbed.transcript import Message

SIZE = (160, 60)
SIMULATED = "could you say more about that?"
HOSTILE_REPLY = "so red \x1b[31mRED\x1b[0m and \ud800 half a pair"
SURROGATE_STAND_IN = "SURROGATE"
"""Where the dataset's reply holds the lone surrogate: the sharegpt loader cannot hash a record holding one, so the
reference episode gets it as it is stored."""
TEXTUAL_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _spec(tmp_path, **overrides):
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-instructed.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": 1})
    data = {"kind": "probe", "name": "ref", "dataset": "sharegpt", "items": {"limit": 3}, "assistant": "scripted.yaml",
            "user": "scripted.yaml", "user_modes": ["raw"], "user_prompt_file": "prompts/user.md", "temperatures": [0.0],
            "max_tokens": 16, **overrides}
    return load_scenario(write_yaml(tmp_path / f"{data['name']}.yaml", data))


def _with_surrogate(original):
    def outcome(item, base, v):
        stored = original(item, base, v)
        last = stored.messages[-1]
        stored.messages[-1] = dataclasses.replace(last, content=last.content.replace(SURROGATE_STAND_IN, "\ud800"))
        return stored
    return outcome


@pytest.fixture
def reference_run(tmp_path, chats_file, store, monkeypatch):
    """A coroutine running a probe over 3 synthetic chats, the third of which the real user answered with escape
    sequences and a lone surrogate; it gives (store path, run id, simulated episodes, reference episodes by item)."""
    records = [conversation(k) for k in range(3)]
    records[2]["conversations"][-1]["value"] = HOSTILE_REPLY.replace("\ud800", SURROGATE_STAND_IN)
    chats_file(records)
    monkeypatch.setattr(human_reference, "reference_outcome", _with_surrogate(human_reference.reference_outcome))

    async def run(**overrides):
        summary = await run_scenario(_spec(tmp_path, **overrides), store, backends={
            "assistant": ScriptedBackend(lambda r: "My own answer."), "user": ScriptedBackend(lambda r: SIMULATED)},
            show_progress=False)
        assert summary.errors == 0
        episodes = store.episodes(summary.run_id)
        references = {e.key.item_id: e for e in episodes if e.key.user_mode == HUMAN_MODE}
        simulated = [e for e in episodes if e.key.user_mode != HUMAN_MODE]
        assert len(references) == 3 and len(simulated) == 3
        return store.path, summary.run_id, simulated, references

    return run


def drawn(app: ReplayApp) -> str:
    """The text on screen; checked here: the bytes a terminal would get hold no escape sequence but textual's own."""
    compositor = app.screen._compositor
    written = compositor.render_full_update().render_segments(app.console)
    assert not set(TEXTUAL_CSI.sub("", written)) & FORBIDDEN, "an escape sequence other than textual's reached the terminal"
    return "\n".join("".join(segment.text for segment in strip) for strip in compositor.render_strips())


def _real_reply(store: Store, run_id: str, reference) -> str:
    last = store.messages(run_id, reference.key.episode_id)[-1]
    assert last.speaker == REAL_USER
    return last.content


async def test_a_simulated_first_turn_shows_the_real_users_turn_on_its_item(reference_run):
    path, run_id, simulated, references = await reference_run()
    store = Store(path, readonly=True)
    episode = next(e for e in simulated if _real_reply(store, run_id, references[e.key.item_id]) in REPLIES)
    real = _real_reply(store, run_id, references[episode.key.item_id])
    app = ReplayApp(store, run_id, episode.key.episode_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.view.episode.key == episode.key
        shown = drawn(app)
        assert f"human reference (real user): {real}" in shown
        assert "answered another message" not in shown
        assert shown.index(SIMULATED) < shown.index("human reference"), "the reference sits under the simulated turn"
        [carrier] = [t for t in screen.view.turns if t.references]
        assert carrier.ordinal == 1 and carrier.message.content == SIMULATED
        [ref] = carrier.references
        assert ref.episode_id == references[episode.key.item_id].key.episode_id


async def test_the_reference_episode_stays_browsable_and_carries_no_reference(reference_run):
    path, run_id, _, references = await reference_run()
    store = Store(path, readonly=True)
    reference = next(iter(references.values()))
    app = ReplayApp(store, run_id, reference.key.episode_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.view.episode.key.user_mode == HUMAN_MODE
        shown = drawn(app)
        assert "(human)" in shown and _real_reply(store, run_id, reference) in shown
        assert "human reference" not in shown and not any(t.references for t in screen.view.turns)


async def test_a_hostile_reference_turn_is_shown_as_marks(reference_run):
    path, run_id, simulated, references = await reference_run()
    store = Store(path, readonly=True)
    episode = next(e for e in simulated if "RED" in _real_reply(store, run_id, references[e.key.item_id]))
    app = ReplayApp(store, run_id, episode.key.episode_id)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = drawn(app)
        assert "human reference (real user): so red ␛[31mRED␛[0m and \\ud800 half a pair" in shown
        assert not any(0xD800 <= ord(c) < 0xE000 for c in shown)


def test_a_reference_block_marks_a_lone_surrogate_and_an_escape():
    block = reference_block(ReferenceTurn("e", "human", Message("user", HOSTILE_REPLY, REAL_USER, 3)))
    assert block.plain == "human reference (real user): so red ␛[31mRED␛[0m and <U+D800> half a pair"
    assert reference_block(ReferenceTurn("e", WEAK_HUMAN_MODEL, Message("user", "", REAL_USER, 3))).plain == \
        "human reference (answered another message): (empty)"
    console = Console(record=True, width=120, force_terminal=True)
    console.print(block)
    assert "\x1b[31m" not in console.export_text(styles=True)


async def test_show_episode_prints_the_weak_reference_under_the_turn(reference_run):
    path, run_id, simulated, references = await reference_run(name="regen", regenerate_answer=True)
    store = Store(path, readonly=True)
    episode = next(e for e in simulated if _real_reply(store, run_id, references[e.key.item_id]) in REPLIES)
    assert references[episode.key.item_id].key.user_model == WEAK_HUMAN_MODEL
    real = _real_reply(store, run_id, references[episode.key.item_id])
    out = CliRunner().invoke(cli, ["show-episode", run_id, episode.key.episode_id, "--store", str(path)],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert f"human reference (answered another message): {real}" in out.output
    assert out.output.index("My own answer.") < out.output.index(SIMULATED) < out.output.index("human reference")


async def test_an_item_without_a_reference_has_none(reference_run):
    path, run_id, simulated, _ = await reference_run()
    store = Store(path, readonly=True)
    assert reference_turns(store, run_id, "no-such-item", user_mode=HUMAN_MODE) == []
    [found] = reference_turns(store, run_id, simulated[0].key.item_id, user_mode=HUMAN_MODE)
    assert found.message.speaker == REAL_USER and found.message.role == "user"
    assert reference_turns(store, run_id, simulated[0].key.item_id, user_mode="raw")[0].message.content == SIMULATED
