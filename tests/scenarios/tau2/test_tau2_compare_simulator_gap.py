"""`testbed compare --simulator-gap`: each native-loop row's assistant also runs with the scripted τ² user, and the row
shows the reward its model user lost on the same tasks; a scenario without tasks is refused."""

from __future__ import annotations

import pytest

from helpers import REPO, write_yaml


async def test_compare_with_the_simulator_gap_runs_the_assistant_with_the_scripted_user_too(tmp_path, store):
    from tau2_script_server import ScriptServer, call, say

    from testbed.analysis.reports.compare_render import comparison_text
    from testbed.running.comparison import run_comparison
    from testbed.specs.loader import load_scenario

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios" / "prompts" / "user-tau2.md").read_text())
    done = "It has been done. Is there anything else I can help you with?"
    async with ScriptServer({"assistant": [call("create_task", {"user_id": "user_1", "title": "Important Meeting"}), say(done)],
                             "user": [say("Never mind. ###STOP###")]}) as server:
        for side in ("assistant", "user"):
            write_yaml(tmp_path / f"{side}.yaml", {"name": side, "backend": "vllm", "model": side, "base_url": server.base_url,
                                                  "max_retries": 0})
        scenario = load_scenario(write_yaml(tmp_path / "t.yaml", {
            "kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": ["create_task_1"]}, "assistant": "assistant.yaml",
            "user": "user.yaml", "temperatures": [0.0], "max_tokens": 32, "max_steps": 12}))
        comparison = await run_comparison(scenario, store, ["native"], show_progress=False, simulator_gap=True)
    (row,) = comparison.frame.to_dict("records")
    assert (row["reward"], row["scripted_reward"], row["simulator_gap"], row["gap_tasks"]) == (0.0, 1.0, -1.0, 1)
    baseline = comparison.baselines["native"]
    assert store.episodes(baseline)[0].key.user_model == "tau2-scripted" and baseline != comparison.run_ids["native"]
    assert "simulator gap (95% CI)" in comparison_text(comparison.frame, [], None, "markdown")
    assert "-1.00 over 1 tasks" in comparison_text(comparison.frame, [], None, "markdown")


def test_the_simulator_gap_is_refused_for_a_scenario_without_tasks(tmp_path):
    from testbed.running.comparison import scripted_user_for
    from testbed.specs.errors import SpecError
    from testbed.specs.loader import load_scenario

    with pytest.raises(SpecError, match="τ² tasks"):
        scripted_user_for(load_scenario("dialogue-gsm8k"))
