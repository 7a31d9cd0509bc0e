"""The run holds its lease from the first step to the last: renewed through slow planning, released at the end."""

from __future__ import annotations

import time

import testbed.running.runner as runner
from testbed.backends.scripted import ScriptedBackend
from testbed.specs.loader import load_scenario
from testbed.store import Store


async def test_the_lease_is_renewed_while_the_plan_is_built_and_released_after(spec_dir, store, monkeypatch):
    scenario = load_scenario(spec_dir())
    run_id = runner.default_run_id(scenario)
    seen: list[float] = []
    real_plan = runner.plan

    def slow_plan(s):
        watcher = Store(store.path, readonly=True)
        for _ in range(4):
            seen.append(watcher.conn.execute("SELECT heartbeat_at FROM run_leases WHERE run_id=?", (run_id,)).fetchone()[0])
            time.sleep(0.15)
        watcher.close()
        return real_plan(s)

    monkeypatch.setattr(runner, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(runner, "plan", slow_plan)
    backend = ScriptedBackend(lambda r: "Why 42?")
    summary = await runner.run_scenario(scenario, store, backends={"assistant": backend, "user": backend}, show_progress=False)
    assert summary.status == "done"
    assert seen == sorted(seen) and seen[-1] > seen[0], "the heartbeat went on while planning blocked its thread"
    assert store.conn.execute("SELECT COUNT(*) FROM run_leases").fetchone()[0] == 0
    assert store.run(run_id)["status"] == "done"
