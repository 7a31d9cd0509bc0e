"""What a run checks first: a dead server is noticed before the plan is built, a busy run before anything starts."""

from __future__ import annotations

import pytest

import testbed.running.runner as runner
from fault_server import FaultServer
from fault_specs import write_probe
from testbed.backends.base import BackendUnavailable
from testbed.specs.loader import load_scenario
from testbed.store.sqlite_store import StoreError


def no_plan(scenario):
    raise AssertionError("the plan was built before the server was checked")


async def test_a_dead_server_is_noticed_before_the_plan_is_built(tmp_path, store, monkeypatch):
    server = FaultServer().start()
    url = server.base_url
    server.stop()
    monkeypatch.setattr(runner, "plan", no_plan)
    with pytest.raises(BackendUnavailable, match="cannot reach"):
        await runner.run_scenario(load_scenario(write_probe(tmp_path, url)), store, show_progress=False)
    assert store.runs() == []


async def test_a_run_held_by_another_writer_is_refused_before_any_server_is_contacted(tmp_path, store, monkeypatch):
    with FaultServer() as server:
        scenario = load_scenario(write_probe(tmp_path, server.base_url))
        other = type(store)(store.path)
        other.acquire_lease(runner.default_run_id(scenario))
        with pytest.raises(StoreError, match="is being written by process"):
            await runner.run_scenario(scenario, store, show_progress=False)
        assert server.chat_count() == 0
