"""Reliability over trials: `vary_seeds` holds one side's seed fixed across a task's trials (ids of `both` runs unmoved),
the stored messages say which condition an episode ran under, and the tau2 report sets pass^k and the across-trial
reward variance of `user` beside `assistant`."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest

from testbed.analysis.tau2.metrics import (ZERO_SPREAD_AT_T0, episode_seeding, reliability_columns, run_seeding,
                                           trial_variance)
from testbed.analysis.tau2.report import tau2_report
from testbed.backends.base import Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import plan, run_scenario
from testbed.scenarios.base import stable_hash
from testbed.scenarios.tau2.kind import scenario_identity
from testbed.specs.errors import SpecError
from testbed.store import EpisodeKey, EpisodeOutcome, EpisodeReward
from testbed.store.frames import episodes_df
from testbed.transcript import Message, Usage
from testbed.store.run_frames import RunFrames

TASK = "create_task_1"


def test_ids_and_run_ids_of_both_runs_do_not_move(tau2_spec):
    default = tau2_spec(trials=2)
    spec = default.spec
    old = [stable_hash(spec.kind, spec.name, TASK, scenario_identity(default), "instructed", 0.0, trial, spec.seed)
           for trial in range(2)]
    assert [v.key.episode_id for _, vs in plan(default) for v in vs] == old, "the id formula from before vary_seeds"
    explicit = tau2_spec(trials=2, vary_seeds=["both"])
    assert explicit.fingerprint() == default.fingerprint() and "vary_seeds" not in default.as_dict()["scenario"]
    varied = tau2_spec(trials=2, vary_seeds=["both", "user", "assistant"])
    ids = [v.key.episode_id for _, vs in plan(varied) for v in vs]
    assert ids[:2] == old and len(set(ids)) == 6, "both keeps its ids; user and assistant get their own"
    assert varied.fingerprint() != default.fingerprint()


def _base_seeds(messages: list[Message]) -> dict[str, int]:
    """Each side's seed before the turn offset, from its first generated message's sampling."""
    out = {}
    for m in messages:
        if m.sampling is not None and m.role not in out:
            out[m.role] = m.sampling["seed"] - m.turn_index
    return out


async def test_each_condition_holds_the_other_side_fixed_and_is_read_back(tau2_spec, store):
    scenario = tau2_spec(trials=3, temperatures=[0.7], vary_seeds=["user", "assistant"])
    assistant = ScriptedBackend(lambda r: Completion("Done. ###STOP###", "stop", Usage(3, 3)))
    user = ScriptedBackend(lambda r: Completion("Please create my task.", "stop", Usage(3, 3)))
    summary = await run_scenario(scenario, store, backends={"assistant": assistant, "user": user}, show_progress=False)
    seeding = run_seeding(store, summary.run_id)
    seeds = defaultdict(lambda: defaultdict(set))
    for episode in store.episodes(summary.run_id):
        messages = store.messages(summary.run_id, episode.key.episode_id)
        vary = seeding[episode.key.episode_id].vary_seeds
        for side, seed in _base_seeds(messages).items():
            seeds[vary][side].add(seed)
    assert {v: {s: len(x) for s, x in sides.items()} for v, sides in seeds.items()} == {
        "user": {"user": 3, "assistant": 1}, "assistant": {"user": 1, "assistant": 3}}
    assert seeds["user"]["assistant"].isdisjoint(seeds["assistant"]["assistant"])
    assert {s.temperature for s in seeding.values()} == {0.7}


def test_an_assistant_with_its_own_seed_cannot_vary(tau2_spec):
    with pytest.raises(SpecError, match="vary_seeds"):
        plan(tau2_spec(assistant="seeded.yaml", vary_seeds=["assistant"]))
    (_, variants), = plan(tau2_spec(assistant="seeded.yaml", vary_seeds=["user"], trials=2))
    assert len(variants) == 2


def test_a_message_without_the_key_is_both_and_tool_results_do_not_count():
    plain = [Message("system", "s", "a", 0), Message("user", "hi", "u", 1, {"temperature": 1.0, "seed": 3})]
    assert episode_seeding(plain).vary_seeds == "both" and episode_seeding(plain).temperature == 1.0
    assert math.isnan(episode_seeding(plain[:1]).temperature)


def test_trial_variance_is_the_mean_of_unbiased_variances_over_tasks_with_two_trials():
    assert trial_variance([[1, 0, 0], [1, 1, 1], [0]]) == (pytest.approx((1 / 3 + 0) / 2), 2)
    variance, tasks = trial_variance([[1.0]])
    assert math.isnan(variance) and tasks == 0


# (vary_seeds, task): rewards over three trials, worked by hand below.
REWARDS = {("user", "a"): [1, 1, 1], ("user", "b"): [1, 0, 0], ("assistant", "a"): [1, 1, 0], ("assistant", "b"): [1, 0, 1]}


def _write(store, rewards, temperature):
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=12)
    i = 0
    for (vary, task), values in rewards.items():
        for trial, reward in enumerate(values):
            key = EpisodeKey(f"e{i:02d}", task, "tau2-mock", "a", "m-a", "u", "m-u", "instructed", temperature, trial, "none")
            sampling = {"temperature": temperature, "seed": i, **({"vary_seeds": vary} if vary != "both" else {})}
            messages = [Message("system", "policy", "a", 0), Message("assistant", "Hi.", "scripted", 1),
                        Message("user", "Help.", "u", 2, sampling), Message("assistant", "Done.", "a", 3, sampling)]
            store.write_episode("r", EpisodeOutcome(key, messages, "done", "user_stop", None, float(reward),
                                                    reward=EpisodeReward(float(reward), {"DB": float(reward)}, {})))
            i += 1
    store.commit()


def test_the_report_sets_user_beside_assistant(store):
    _write(store, REWARDS, 1.0)
    (row,) = tau2_report(RunFrames(store, "r", None)).to_dict("records")
    assert row["episodes"] == 12 and row["pass_hat_1"] == pytest.approx(8 / 12), "the row pools both conditions"
    assert row["vary_user_trial_variance"] == pytest.approx((0 + 1 / 3) / 2)
    assert row["vary_assistant_trial_variance"] == pytest.approx(1 / 3)
    assert row["user_variance_share"] == pytest.approx(1 / 3)
    assert [row[f"vary_user_pass_hat_{k}"] for k in (1, 2, 3)] == pytest.approx([2 / 3, 1 / 2, 1 / 2])
    assert [row[f"vary_assistant_pass_hat_{k}"] for k in (1, 2, 3)] == pytest.approx([2 / 3, 1 / 3, 0])
    assert row["vary_user_trials"] == row["vary_assistant_trials"] == 3 and row["vary_note"] == ""


def test_no_spread_at_temperature_zero_is_said_to_be_expected(store):
    _write(store, {k: [1, 1, 1] for k in REWARDS}, 0.0)
    report = tau2_report(RunFrames(store, "r", None))
    assert report.vary_note.tolist() == [ZERO_SPREAD_AT_T0]
    assert report.vary_user_trial_variance.tolist() == [0.0] and math.isnan(report.user_variance_share.iloc[0])


def test_a_run_that_varied_no_single_side_gets_no_columns(store):
    _write(store, {("both", "a"): [1, 0, 1], ("both", "b"): [0, 0, 1]}, 1.0)
    assert not any(c.startswith("vary_") for c in tau2_report(RunFrames(store, "r", None)).columns)
    assert list(reliability_columns(store, "r", episodes_df(store, "r"), ["temperature"]).columns) == ["temperature"]
