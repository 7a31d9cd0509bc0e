"""Judging a run chunk by chunk: every turn once, a stopped judge keeps what it wrote, a model starts once."""

from __future__ import annotations

import pytest

from helpers import write_yaml
from testbed.backends.factory import BackendPool
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.local.judge import LocalJudge
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.labels import labels_frame


async def stored_run(spec_dir, store) -> str:
    """A probe of 3 items × 2 modes × 2 temperatures: 12 user turns."""
    answers = ScriptedBackend(lambda r: "It is 12 because 0.15 * 80 = 12.")
    users = ScriptedBackend(lambda r: "Why 0.15?")
    summary = await run_scenario(load_scenario(spec_dir()), store, backends={"assistant": answers, "user": users}, show_progress=False)
    return summary.run_id


async def test_small_chunks_label_every_turn_once_in_turn_order(spec_dir, store):
    run_id = await stored_run(spec_dir, store)
    summary = await judge_run(store, run_id, load_judge("local"), show_progress=False, chunk=5)
    assert (summary.turns, summary.skipped, summary.scored) == (12, 0, 12)
    frame = labels_frame(store, run_id, summary.identity)
    assert list(zip(frame.episode_id, frame.turn_index)) == [(t.episode_id, t.turn_index) for t in store.turns(run_id)]


async def test_a_judge_stopped_midway_keeps_its_commits_and_the_rerun_does_the_rest(spec_dir, store, monkeypatch):
    run_id = await stored_run(spec_dir, store)
    calls = {"n": 0}
    judge_one = LocalJudge.judge

    def failing(self, item):
        calls["n"] += 1
        if calls["n"] == 10:
            raise KeyboardInterrupt
        return judge_one(self, item)

    monkeypatch.setattr(LocalJudge, "commit_every", 4)
    monkeypatch.setattr(LocalJudge, "judge", failing)
    with pytest.raises(KeyboardInterrupt):
        await judge_run(store, run_id, load_judge("local"), show_progress=False, chunk=5)
    kept = labels_frame(store, run_id, LocalJudge().identity)
    assert len(kept) == 9, "chunk one is written whole (a commit of four, then its last one), chunk two's first four too"
    monkeypatch.undo()
    again = await judge_run(store, run_id, load_judge("local"), show_progress=False, chunk=5)
    assert (again.skipped, again.scored) == (9, 3)
    assert len(labels_frame(store, run_id, again.identity)) == 12


async def test_a_model_judge_starts_its_backend_once_for_all_chunks(spec_dir, store, tmp_path, monkeypatch):
    run_id = await stored_run(spec_dir, store)
    agent = write_yaml(tmp_path / "judge-model.yaml", {"name": "judge-model", "backend": "scripted", "model": "judge-m",
                                                       "outputs": ['{"label": "genuine_followup", "reason": "asks why"}']})
    started = []
    backend_for = BackendPool.backend_for

    async def counting(self, spec):
        started.append(spec.name)
        return await backend_for(self, spec)

    monkeypatch.setattr(BackendPool, "backend_for", counting)
    summary = await judge_run(store, run_id, load_judge("failure-modes", model=agent), show_progress=False, chunk=5)
    assert summary.scored == 12 and started == ["judge-model"]
    again = await judge_run(store, run_id, load_judge("failure-modes", model=agent), show_progress=False, chunk=5)
    assert again.skipped == 12 and started == ["judge-model"], "nothing left to judge: no model is started"
