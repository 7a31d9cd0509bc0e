"""The fault lab through a store: a `user_faults` grid run by the τ² kind keeps each planted turn's record through the
store, the rules stored as the run ends flag the planted faults, and the default judge's drift labels (stored as
`testbed judge` stores them) flag the user who answers as the agent."""

from __future__ import annotations

import asyncio
import sys

from helpers import REPO
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.user_faults import store_judged_faults
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.fault_injection import FAULT_KEY, FAULT_TURN_KEY, plan_record
from testbed.specs.tau2 import plan_of
from testbed.store.frames import episodes_df
from testbed.store.labels import DEFAULT_JUDGE
from testbed.store.user_faults import faults_df

sys.path.insert(0, str(REPO / "benchmarks"))

from fault_lab import run_lab  # noqa: E402

PLANS = ["invented_fact@3", "answers_as_agent@2", "premature_stop@3", "near_stop_after_refusal@4"]


def test_a_planted_run_keeps_its_records_and_its_detectors_flag_the_planted_turns(store, tmp_path):
    task = domain("mock").tasks["update_task_1"]
    run_id = asyncio.run(run_lab(store, tmp_path / "lab.yaml", "mock", [task], PLANS, 0, REPO / "scenarios/prompts/user-tau2.md"))
    summary = asyncio.run(judge_run(store, run_id, load_judge(DEFAULT_JUDGE), show_progress=False))
    store_judged_faults(store, run_id, summary.identity)
    judge = summary.identity
    episodes = episodes_df(store, run_id, exact=True).set_index("episode_id")
    assert sorted(episodes.perturbation) == sorted(["none", *(f"user-fault:{p}" for p in PLANS)])
    faults = faults_df(store, run_id, judge)
    seen, shapes = {}, {}
    for eid, messages in store.iter_messages(run_id):
        plan = plan_of(episodes.loc[eid, "perturbation"])
        record = plan_record(messages)
        if plan is None:
            rules = faults[(faults.episode_id == eid) & faults.detector.str.startswith("tau2-user-rules@")]
            assert record is None and rules.empty, "the rules find nothing in the clean episode"
            continue
        planted = next(m for m in messages if m.turn_index == record[2])
        assert planted.sampling[FAULT_KEY] == plan.kind and planted.sampling[FAULT_TURN_KEY] == plan.turn
        seen[plan.kind] = set(faults[(faults.episode_id == eid) & (faults.turn_index == record[2])].kind)
        shapes[plan.kind] = record[3].split()[0]
    missed = shapes["invented_fact"] in ("date", "name-unmarked")
    assert ("invented_fact" in seen["invented_fact"]) != missed, "flagged unless it is a shape the rules cannot read"
    assert "premature_stop" in seen["premature_stop"]
    assert "role_drift" in seen["answers_as_agent"], "the default judge calls the user speaking as the agent drift"
    assert "premature_stop" not in seen["near_stop_after_refusal"]
