"""The simulator gap: a τ² users sweep with a model user and the scripted user shows, on the model user's rows of the
tau2 report, the scripted user's reward on the same tasks and the paired difference with its interval."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from helpers import REPO, write_yaml
from testbed.analysis.reports.render import as_markdown, as_rich_tables
from testbed.analysis.tau2.report import tau2_report
from testbed.analysis.tau2.simulator_gap import simulator_gap
from testbed.backends.base import Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.scenarios.tau2.scripted_user_server import ScriptedUserBackend
from testbed.specs.sweep import load_sweep
from testbed.running.sweep_runner import run_sweep
from testbed.transcript import ToolCall, Usage
from testbed.store.run_frames import RunFrames

pytest.importorskip("tau2")

CALLS = {"create_task_1": ("create_task", {"user_id": "user_1", "title": "Important Meeting"}),
         "update_task_1": ("update_task_status", {"task_id": "task_1", "status": "completed"})}


def helpful(request) -> Completion:
    """An assistant that does what the customer's first words ask, then reports it done (a scripted backend)."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return Completion("It has been done. Is there anything else I can help you with?", "stop", Usage(2, 2))
    said = last.get("content") or ""
    task = "create_task_1" if "Important Meeting" in said else "update_task_1" if "task_1" in said else None
    if task is not None:
        name, arguments = CALLS[task]
        call = ToolCall(f"c{len(request.messages)}", name, json.dumps(arguments))
        return Completion("", "tool_calls", Usage(2, 2), tool_calls=(call,))
    return Completion("Could you say more?", "stop", Usage(2, 2))


def test_a_users_sweep_shows_the_gap_to_the_scripted_user_on_the_same_tasks(tmp_path, store):
    (tmp_path / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-tau2.md").read_text())
    for name in ("helper", "hasty"):
        write_yaml(tmp_path / f"{name}.yaml", {"name": name, "backend": "scripted", "model": f"{name}-model", "outputs": ["x"]})
    sweep = load_sweep(write_yaml(tmp_path / "sweep.yaml", {
        "kind": "sweep", "name": "gap", "scenario": "tau2", "agents": ["helper.yaml"],
        "users": ["hasty.yaml", "tau2-scripted-user"], "domain": "mock", "tasks": {"ids": list(CALLS)}, "trials": 2,
        "user_prompt_file": "user.md", "temperatures": [0.0], "max_tokens": 32, "max_steps": 12}))

    async def run():
        scripted = ScriptedUserBackend("scripted-user", "scripted-user")
        await scripted.start()
        try:
            hasty = ScriptedBackend(lambda r: Completion("Never mind. ###STOP###", "stop", Usage(2, 2)), model="hasty-model")
            backends = {"helper": ScriptedBackend(helpful, model="helper-model"), "hasty": hasty, "scripted-user": scripted}
            return await run_sweep(sweep, store, backends=backends, show_progress=False)
        finally:
            await scripted.close()

    summary = asyncio.run(run())
    report = tau2_report(RunFrames(store, summary.run_id, None)).set_index("user_model")
    assert sorted(report.index) == ["hasty-model", "tau2-scripted"]
    assert report.loc["tau2-scripted", "reward"] == 1.0, "the scripted user asked, and the helper did every task"
    hasty = report.loc["hasty-model"]
    assert (hasty.reward, hasty.scripted_reward, hasty.simulator_gap, hasty.gap_tasks) == (0.0, 1.0, -1.0, 2)
    assert (hasty.simulator_gap_lo, hasty.simulator_gap_hi) == (-1.0, -1.0)
    assert math.isnan(report.loc["tau2-scripted", "simulator_gap"])
    table = as_markdown(report.reset_index())
    assert "simulator gap (95% CI)" in table and "-1.00 (-1.00 to -1.00)" in table
    titles = [t.title for t in as_rich_tables(report.reset_index(), "gap")]
    assert "simulator gap (model user − scripted user, paired by task)" in titles


def test_the_gap_pairs_by_task_and_leaves_out_tasks_only_one_side_has():
    import pandas as pd

    def episodes(scores: dict[str, list[float]]) -> pd.DataFrame:
        return pd.DataFrame([{"item_id": t, "status": "done", "task_score": s} for t, ss in scores.items() for s in ss])

    gap = simulator_gap(episodes({"a": [1.0, 0.0], "b": [0.0, 0.0], "c": [1.0]}), episodes({"a": [1.0, 1.0], "b": [1.0, 0.0]}))
    assert gap["gap_tasks"] == 2 and gap["scripted_reward"] == 0.75 and gap["simulator_gap"] == pytest.approx(-0.5)
    assert gap["simulator_gap_lo"] <= -0.5 <= gap["simulator_gap_hi"]
    none = simulator_gap(episodes({"a": [1.0]}), episodes({"b": [1.0]}))
    assert none["gap_tasks"] == 0 and math.isnan(none["simulator_gap"])

