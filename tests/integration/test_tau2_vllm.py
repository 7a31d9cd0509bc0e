"""τ² mock-domain tasks on a real vLLM server started with tool calling: the pipeline end to end, not the reward.

The embedded SmolLM2's chat template renders no tools, so it rarely calls one (the reward is the
model's to earn); what is checked is that requests carry the domain's tools, episodes finish with
τ²'s terminations, rewards from τ²'s evaluator are stored, and the report shows them.
"""

from __future__ import annotations

import pytest

from helpers import REPO, run_cli, run_id_of, write_yaml

pytestmark = pytest.mark.integration
pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")


def test_mock_tasks_run_on_vllm_with_tools_and_are_scored(server_agent, tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    spec = write_yaml(tmp_path / "tau2.yaml", {
        "kind": "tau2", "name": "tau2-it", "domain": "mock", "tasks": {"ids": ["create_task_1", "update_task_1"]},
        "assistant": str(server_agent), "user": str(server_agent), "temperatures": [0.0], "max_tokens": 48, "max_steps": 8,
    })
    db = tmp_path / "store.sqlite"
    done = run_cli("run", str(spec), "--store", str(db), "--no-judge", "--wire")
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = run_id_of(done.stdout)

    from testbed.store import Store

    store = Store(db, readonly=True)
    episodes = store.episodes(run_id)
    assert len(episodes) == 2 and all(e.status == "done" for e in episodes), [e.error_reason for e in episodes]
    assert {e.termination for e in episodes} <= {"user_stop", "transfer", "agent_stop", "max_steps", "too_many_errors"}
    rewards = store.rewards(run_id)
    assert set(rewards) == {e.key.episode_id for e in episodes}
    assert all(0.0 <= r.reward <= 1.0 and e.task_score == rewards[e.key.episode_id].reward for e in episodes for r in [rewards[e.key.episode_id]])
    wire = [w for e in episodes for w in store.wire(run_id, e.key.episode_id)]
    assistant_requests = [w.request for w in wire if w.role == "assistant"]
    assert assistant_requests and all(len(r["tools"]) == 4 and r["tool_choice"] == "auto" for r in assistant_requests)
    assert all("tools" not in w.request for w in wire if w.role == "user"), "the mock domain's user has no tools"
    store.close()

    report = run_cli("report", run_id, "--store", str(db))
    assert report.returncode == 0 and "reward" in report.stdout, report.stdout + report.stderr
