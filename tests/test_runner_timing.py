"""`run_scenario(timing=...)`: a context manager entered just around a run's episodes, for benchmarks."""

from __future__ import annotations

import contextlib

from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario


async def test_timing_wraps_the_episodes_once_and_is_skipped_when_nothing_is_left(spec_dir, store):
    scenario = load_scenario(spec_dir(items={"limit": 1}))
    backend = ScriptedBackend(lambda req: "Why 42?")
    seen: list[tuple[str, int]] = []

    @contextlib.contextmanager
    def timing():
        seen.append(("enter", len(store.done_episode_ids(run_id))))
        yield
        seen.append(("exit", len(store.done_episode_ids(run_id))))

    run_id = "timed"
    first = await run_scenario(scenario, store, run_id=run_id, backends={"assistant": backend, "user": backend},
                               show_progress=False, timing=timing)
    assert seen == [("enter", 0), ("exit", first.planned)]
    await run_scenario(scenario, store, run_id=run_id, backends={"assistant": backend, "user": backend}, show_progress=False,
                       timing=timing)
    assert len(seen) == 2, "a run with nothing left to do runs no episodes, so nothing is timed"
