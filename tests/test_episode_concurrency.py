"""`concurrency` counts episodes in flight across the run, not dataset items, and a fatal error stops every episode."""

from __future__ import annotations

import asyncio

import pytest

from helpers import write_yaml
from testbed.backends.base import BackendUnavailable, Capabilities, Completion, GenerateRequest
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.transcript import Usage


class CountingBackend:
    """Answers after a short sleep and records the most generations in flight at once."""

    def __init__(self, fail_after: int | None = None):
        self.name = self.model = "counting"
        self.capabilities = Capabilities(continue_user_turn=True, structured_output=True)
        self.in_flight = self.most = self.calls = 0
        self.fail_after = fail_after

    async def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to close."""

    async def generate(self, request: GenerateRequest) -> Completion:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise BackendUnavailable("the server stopped answering during the run")
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.01)
        finally:
            self.in_flight -= 1
        return Completion("Why 42?", "stop", Usage(1, 1, 0.01))


def scenario_with(spec_dir, tmp_path, concurrency: int):
    write_yaml(tmp_path / "wide.yaml", {"name": "wide", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": concurrency})
    return load_scenario(spec_dir(assistant="wide.yaml", user="wide.yaml", items={"limit": 5}, samples_per_temperature=4))


async def test_episodes_in_flight_never_exceed_concurrency(spec_dir, store, tmp_path):
    backend = CountingBackend()
    summary = await run_scenario(scenario_with(spec_dir, tmp_path, 3), store, backends={"assistant": backend, "user": backend},
                                 show_progress=False)
    assert summary.done == 5 * 2 * 2 * 4
    assert backend.most == 3, "16 variants per item, 5 items: at most 3 generations at a time"


async def test_a_fatal_backend_error_stops_the_run_and_records_no_episode_error(spec_dir, store, tmp_path):
    backend = CountingBackend(fail_after=12)
    with pytest.raises(BackendUnavailable):
        await run_scenario(scenario_with(spec_dir, tmp_path, 4), store, backends={"assistant": backend, "user": backend},
                           show_progress=False)
    statuses = [r[0] for r in store.conn.execute("SELECT status FROM episodes")]
    assert statuses and set(statuses) == {"done"}
    assert len(statuses) < 80, "the run stopped instead of going on"
    assert store.run(store.runs()[0]["run_id"])["status"] == "failed"
