"""A replay store made by a real run with scripted models: dialogues under two temperatures, one errored
episode, labels from the local judge and from a second judge that marks a known drift onset."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from helpers import REPO, write_yaml
from testbed.backends.base import BackendError
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import Store
from testbed.store.labels import JudgeIdentity, write_labels

ECHO = "ECHO"
"""The second judge's drift label goes on every user turn that contains this word: the known onsets."""
SECOND = JudgeIdentity("failure-modes", "v2", "judge-model")


def _user_replies():
    """Scripted simulated user: asks twice, then echoes the assistant; its fifth call fails (an errored episode)."""
    calls = {"n": 0}

    def reply(request) -> str:
        calls["n"] += 1
        if calls["n"] == 5:
            raise BackendError("HTTP 503 from the user model")
        answer = request.messages[-1]["content"]
        turn = sum(m["role"] == "user" for m in request.messages)
        if turn >= 3:
            return f"{ECHO}: {answer}"
        return f"Why is step {turn} right? Can you check the arithmetic again?"

    return reply


@pytest.fixture(scope="session")
def replay_store(tmp_path_factory) -> tuple[Path, str]:
    """(store path, run id) of a dialogue run: 4 items x 2 temperatures, one errored episode, labelled by two judges."""
    folder = tmp_path_factory.mktemp("replay")
    (folder / "prompts").mkdir()
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": 1})
    spec = write_yaml(folder / "dlg.yaml", {
        "kind": "dialogue", "name": "replay-dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 4},
        "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["instructed"],
        "user_prompt_file": "prompts/user.md", "temperatures": [0.0, 0.7], "max_tokens": 16, "max_user_turns": 4,
        "end_marker": "[[END]]", "token_budget": 10_000})
    scenario = load_scenario(spec)
    assistant = ScriptedBackend(lambda r: f"The answer is {len(r.messages) * 7}, because {len(r.messages)} times 7.")
    path = folder / "store.sqlite"
    store = Store(path)
    summary = asyncio.run(run_scenario(scenario, store, backends={"assistant": assistant, "user": ScriptedBackend(_user_replies())},
                                       show_progress=False))
    run_id = summary.run_id
    asyncio.run(judge_run(store, run_id, load_judge("local"), show_progress=False))
    rows = []
    for t in store.turns(run_id):
        label = "echo_assistant" if ECHO in t.user_turn else "genuine_followup"
        rows.append(label_row(t.episode_id, t.turn_index, Verdict(label, label == "genuine_followup", f"second judge says {label}")))
    write_labels(store, run_id, SECOND, rows)
    store.close()
    return path, run_id


def plain(widget) -> str:
    """What a Static widget shows, as plain text (its rich content rendered 200 columns wide)."""
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


@pytest.fixture
def replay_copy(replay_store, tmp_path) -> tuple[Path, str]:
    """A private copy of the replay store, for tests that write labels."""
    import shutil

    path, run_id = replay_store
    copy = tmp_path / "store.sqlite"
    shutil.copy(path, copy)
    return copy, run_id
