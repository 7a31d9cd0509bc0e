"""A τ² sweep over simulated users: one assistant, the same tasks, several user models and user temperatures in one
run, reported by the tau2 report; the built-in example loads, and a τ² sweep refuses a dataset axis."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from helpers import REPO, write_yaml
from testbed.analysis.tau2.report import tau2_report
from testbed.backends.base import Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import plan
from testbed.specs.errors import SpecError
from testbed.specs.sweep import find_sweep, load_sweep
from testbed.running.sweep_runner import run_sweep, sweep_run_id
from testbed.transcript import Usage
from testbed.store.run_frames import RunFrames
from testbed.store.user_faults import checked_episodes


@pytest.fixture
def users_sweep(tmp_path):
    (tmp_path / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-tau2.md").read_text())
    for name in ("helper", "calm", "terse"):
        write_yaml(tmp_path / f"{name}.yaml", {"name": name, "backend": "scripted", "model": f"{name}-model", "outputs": ["x"]})

    def sweep(**overrides):
        data = {"kind": "sweep", "name": "users", "scenario": "tau2", "agents": ["helper.yaml"],
                "users": ["calm.yaml", "terse.yaml"], "domain": "mock", "tasks": {"ids": ["create_task_1", "update_task_1"]},
                "trials": 2, "user_prompt_file": "user.md", "temperatures": [0.0, 1.0], "max_tokens": 32, "max_steps": 12}
        data.update(overrides)
        return write_yaml(tmp_path / "sweep.yaml", data)

    return sweep


def test_a_tau2_sweep_runs_every_user_at_every_temperature_into_one_run(users_sweep, store):
    sweep = load_sweep(users_sweep())
    assert [(c.assistant.spec.name, c.user.spec.name, c.spec.dataset) for c in sweep.cells] == [
        ("helper", "calm", "tau2-mock"), ("helper", "terse", "tau2-mock")]
    seen = Counter()

    def user(name):
        def respond(request):
            seen[(name, request.temperature)] += 1
            return Completion(f"{name} needs a task. ###STOP###", "stop", Usage(2, 2))
        return ScriptedBackend(respond, name=name, model=f"{name}-model")

    backends = {"helper": ScriptedBackend(lambda r: Completion("Sure.", "stop", Usage(2, 2)), model="helper-model"),
                "calm": user("calm"), "terse": user("terse")}
    summary = asyncio.run(run_sweep(sweep, store, backends=backends, show_progress=False))
    run = store.run(summary.run_id)
    assert run.kind == "tau2" and summary.run_id == sweep_run_id(sweep)
    assert seen == {(n, t): 4 for n in ("calm", "terse") for t in (0.0, 1.0)}, "2 tasks x 2 trials per user x temperature"
    report = tau2_report(RunFrames(store, summary.run_id, None))
    assert sorted(zip(report.user_model, report.temperature)) == [(n, t) for n in ("calm-model", "terse-model") for t in (0.0, 1.0)]
    assert (report.episodes == 4).all() and (report.tasks == 2).all() and (report.errors == 0).all()
    assert (report.end_user_stop == 1.0).all(), "every user said stop on its first turn"
    assert len(checked_episodes(store, summary.run_id)) == 16, "the sweep stored every episode's user faults as it ended"


def test_a_tau2_sweep_has_no_dataset_axis_and_one_user_axis(users_sweep):
    with pytest.raises(SpecError, match="no dataset field"):
        load_sweep(users_sweep(datasets=["gsm8k"]))
    with pytest.raises(SpecError, match="not both"):
        load_sweep(users_sweep(user="calm.yaml"))
    one = load_sweep(users_sweep(users=None, user="calm.yaml"))
    assert [c.user.spec.name for c in one.cells] == ["calm"] and "users" not in one.as_dict()


def test_the_example_sweep_loads_with_two_users_and_two_temperatures():
    sweep = load_sweep(find_sweep("tau2-users"))
    assert len({c.user.spec.name for c in sweep.cells}) == 2 and len({c.assistant.spec.name for c in sweep.cells}) == 1
    assert sweep.conditions.domain == "mock" and len(sweep.conditions.temperatures) == 2
    assert all(c.assistant.spec.server.tool_call_parser for c in sweep.cells), "the assistant calls tools"
    assert len({v.key.episode_id for c in sweep.cells for _, vs in plan(c) for v in vs}) == 9 * 2 * 2 * 2
