"""Annotation items of a stored τ² run: built as the fault gold set's are, never holding τ²'s scripted history."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("tau2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers import REPO, write_yaml  # noqa: E402
from testbed.analysis.judge_quality.labelset import annotation_items  # noqa: E402
from testbed.analysis.tau2.annotation import SCRIPTED_NOTE  # noqa: E402
from testbed.backends.base import Capabilities, Completion  # noqa: E402
from testbed.backends.scripted import ScriptedBackend  # noqa: E402
from testbed.running.runner import run_scenario  # noqa: E402
from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.specs.loader import load_scenario  # noqa: E402
from testbed.store import Store  # noqa: E402
from testbed.transcript import Usage  # noqa: E402

HISTORY, PLAIN = "update_task_with_message_history", "create_task_1"


def _reply(words: str):
    """Each reply names how long the conversation is, so no two of a speaker's turns are the same text."""
    def reply(request):
        said = f"{words} ({len(request.messages)})"
        return Completion(said if len(request.messages) < 9 else f"{said} ###STOP###", "stop", Usage(5, 5))
    return reply


def _texts(item: dict) -> list[str]:
    return [item["question"], item["assistant"], item["user_turn"], *(c["content"] for c in item["context"])]


def test_tau2_items_leave_out_the_opening_and_mask_the_scripted_history(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    spec = write_yaml(tmp_path / "t.yaml", {"kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [HISTORY, PLAIN]},
                                            "assistant": "scripted.yaml", "user": "scripted.yaml", "temperatures": [0.0],
                                            "max_tokens": 32, "max_steps": 12})
    caps = Capabilities(continue_user_turn=True)
    store = Store(tmp_path / "s.sqlite")
    asyncio.run(run_scenario(load_scenario(spec), store, show_progress=False,
                             backends={"assistant": ScriptedBackend(_reply("Which task id?"), capabilities=caps),
                                       "user": ScriptedBackend(_reply("It is task_1, please mark it done."), capabilities=caps)}))
    run_id = store.runs()[0]["run_id"]
    items = annotation_items(store, [run_id])
    store.close()
    history = [m.content for m in domain("mock").tasks[HISTORY].initial_state.message_history if getattr(m, "content", None)]
    assert items and history
    shown = [t for i in items for t in _texts(i)]
    assert not any(h in t for h in history for t in shown), "a scripted message of the task reached an item"
    assert any(SCRIPTED_NOTE in t for t in shown)
    assert all(i["user_turn"] != i["question"] for i in items), "the customer's opening became an item"
    assert sorted({i["turn"] for i in items})[0] == 1
