"""τ² outcomes in the framework comparison: a real native τ² run (scripted models on the mock domain) beside a
second run written by hand on the same episodes, with rewards chosen so every number is known.

Native plays create_task_1's expected calls on every task, so it solves create_task_1 (reward 1) and fails
update_task_1 (reward 0) in both trials. The twin's rewards per (task, trial) are in TWIN.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
from dataclasses import replace

import pandas as pd
import pytest
from rich.console import Console

from helpers import REPO, write_yaml
from testbed.analysis.reports.compare_render import columns_for, comparison_tables, comparison_text
from testbed.analysis.reports.compare import compare_frameworks
from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.compare import paired_bootstrap_interval, tau2_paired_with_native
from testbed.analysis.tau2.metrics import reward_interval
from testbed.backends.base import Capabilities, Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import EpisodeOutcome, EpisodeReward
from testbed.transcript import Message, ToolCall, ToolResult, Usage

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.oracle import expected_calls, final_words  # noqa: E402

SOLVED, FAILED = "create_task_1", "update_task_1"
TWIN = {(SOLVED, 0): 0.5, (SOLVED, 1): 0.0, (FAILED, 0): 1.0, (FAILED, 1): None}
"""The twin's reward per (task, trial); None: the episode errored."""


def native_backends() -> dict[str, ScriptedBackend]:
    """An assistant that makes create_task_1's expected calls, then says what that task must communicate (and stops);
    a user that asks once."""
    task = domain("mock").tasks[SOLVED]

    def assistant(request) -> Completion:
        if request.messages[-1]["role"] == "tool":
            return Completion(final_words(task), "stop", Usage(5, 5))
        return Completion("", "tool_calls", Usage(5, 5), tool_calls=tuple(expected_calls(task)))

    user = lambda request: Completion("I need a task created.", "stop", Usage(5, 5))  # noqa: E731
    caps = Capabilities(continue_user_turn=True)
    return {"assistant": ScriptedBackend(assistant, capabilities=caps), "user": ScriptedBackend(user, capabilities=caps)}


def twin_messages(reward: float | None) -> list[Message]:
    """A greeting and a request, then (when it finished) two tool calls, one answered with an error, and a reply."""
    out = [Message("system", "You are an agent.", "assistant", 0), Message("assistant", "Hi, how can I help?", "a", 1),
           Message("user", "I need a task created.", "u", 2)]
    if reward is None:
        return out
    calls = (ToolCall("c1", "get_users", "{}"), ToolCall("c2", "create_task", "{}"))
    return out + [Message("assistant", "", "a", 3, tool_calls=calls),
                  Message("tool", "[]", "environment", 4, tool_result=ToolResult("c1", "get_users")),
                  Message("tool", "Error: missing arguments", "environment", 5,
                          tool_result=ToolResult("c2", "create_task", error=True)),
                  Message("assistant", "Done.", "a", 6)]


def write_twin(store, native_run: str, rewards: dict = TWIN, run_id: str = "twin") -> str:
    """A second 'framework' run on native's episode keys, with the rewards given."""
    store.begin_run(run_id, scenario="t", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None,
                    planned=len(rewards), framework=run_id)
    for episode in store.episodes(native_run):
        reward = rewards[(episode.key.item_id, episode.key.sample_index)]
        if reward is None:
            outcome = EpisodeOutcome(episode.key, twin_messages(None), "error", "error", "assistant: HTTP 500")
        else:
            outcome = EpisodeOutcome(episode.key, twin_messages(reward), "done", "agent_stop", None, reward,
                                     reward=EpisodeReward(reward, {"DB": reward}, {}))
        store.write_episode(run_id, outcome)
    store.commit()
    return run_id


@pytest.fixture
def native_run(tmp_path, store) -> str:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    spec = {"kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [SOLVED, FAILED]}, "assistant": "scripted.yaml",
            "user": "scripted.yaml", "temperatures": [0.0], "trials": 2, "max_tokens": 32, "max_steps": 20}
    summary = asyncio.run(run_scenario(load_scenario(write_yaml(tmp_path / "t.yaml", spec)), store,
                                       backends=native_backends(), show_progress=False))
    scores = {(e.key.item_id, e.key.sample_index): e.task_score for e in store.episodes(summary.run_id)}
    assert scores == {(SOLVED, 0): 1.0, (SOLVED, 1): 1.0, (FAILED, 0): 0.0, (FAILED, 1): 0.0}, "the scripted native run"
    return summary.run_id


@pytest.fixture
def frame(store, native_run) -> pd.DataFrame:
    return compare_frameworks(store, {"native": native_run, "twin": write_twin(store, native_run)}, {})


def test_each_framework_gets_its_mean_reward_with_the_right_interval_and_its_error_share(frame):
    native, twin = frame.iloc[0], frame.iloc[1]
    assert (native.episodes, native.errors, native.scored, native.successes) == (4, 0, 4, 2)
    assert native.reward == 0.5 and native.reward_interval == "wilson"
    assert (native.reward_lo, native.reward_hi) == pytest.approx(wilson_interval(2, 4))
    assert native.error_share == 0.0 and (native.error_lo, native.error_hi) == pytest.approx(wilson_interval(0, 4))
    assert (twin.episodes, twin.errors, twin.scored, twin.successes) == (4, 1, 3, 1), "the errored episode is no score"
    assert twin.reward == pytest.approx(0.375), \
        "(0.5 + 0 + 1 + 0) / 4: a partial reward counts at its value, the errored episode as 0 (τ²'s runner)"
    assert twin.reward_interval == "bootstrap"
    assert (twin.reward_lo, twin.reward_hi) == pytest.approx(reward_interval([0.5, 0.0, 1.0, 0.0])[:2])
    assert twin.error_share == 0.25 and (twin.error_lo, twin.error_hi) == pytest.approx(wilson_interval(1, 4))


def test_pass_hat_k_goes_up_to_the_fewest_scored_trials_of_a_task(frame):
    native, twin = frame.iloc[0], frame.iloc[1]
    assert (native.pass_hat_1, native.pass_hat_2) == (0.5, 0.5), "create_task_1 2/2, update_task_1 0/2"
    assert twin.pass_hat_1 == 0.25, "create_task_1 0/2 (0.5 is no success), update_task_1 1/2 (its errored trial failed)"
    assert twin.pass_hat_2 == 0.0, "an errored trial is a failed trial, so update_task_1 has two trials and no pass^2 success"


def test_tool_calls_and_errors_are_per_finished_episode(frame):
    native, twin = frame.iloc[0], frame.iloc[1]
    assert native.tool_calls_per_episode == len(expected_calls(domain("mock").tasks[SOLVED]))
    assert native.tool_errors_per_episode == 0.0 and native.user_tool_calls_per_episode == 0.0
    assert (twin.tool_calls_per_episode, twin.tool_errors_per_episode) == (2.0, 1.0), "over the 3 finished episodes"


def test_the_reward_is_paired_with_native_on_task_and_trial_leaving_errored_pairs_out(frame):
    native, twin = frame.iloc[0], frame.iloc[1]
    assert math.isnan(native.reward_pairs), "native is not paired with itself"
    assert (twin.reward_pairs, twin.reward_pairs_errored, twin.reward_pairs_unscored) == (3, 1, 0)
    differences = [0.5 - 1.0, 0.0 - 1.0, 1.0 - 0.0]
    assert twin.reward_change == pytest.approx(-1 / 6)
    assert (twin.reward_change_lo, twin.reward_change_hi) == pytest.approx(paired_bootstrap_interval(differences))
    assert -1.0 <= twin.reward_change_lo < twin.reward_change < twin.reward_change_hi <= 1.0


def test_an_episode_only_one_run_has_is_no_pair_and_an_unscored_one_is_left_out_and_counted():
    keys = ["e1", "e2", "e3", "e4"]
    native = pd.DataFrame({"episode_id": keys, "status": ["done"] * 4, "task_score": [1.0, 0.0, 1.0, None]})
    other = pd.DataFrame({"episode_id": keys[1:] + ["e9"], "status": ["done", "done", "done", "done"],
                          "task_score": [1.0, 1.0, 0.0, 0.0]})
    paired = tau2_paired_with_native(native, other, ["e2", "e3", "e4"])
    assert (paired["reward_pairs"], paired["reward_pairs_errored"], paired["reward_pairs_unscored"]) == (2, 0, 1)
    assert paired["reward_change"] == 0.5, "e2: 1 - 0, e3: 1 - 1"


def test_the_paired_bootstrap_is_seeded_and_needs_two_pairs():
    assert paired_bootstrap_interval([0.25, 0.25, 0.25]) == (0.25, 0.25), "no spread: the interval is the mean"
    assert all(math.isnan(v) for v in paired_bootstrap_interval([1.0]))
    spread = [1.0, -1.0, 0.0, 1.0, 0.0, 1.0]
    lo, hi = paired_bootstrap_interval(spread)
    assert paired_bootstrap_interval(spread) == (lo, hi) and -1.0 <= lo < sum(spread) / 6 < hi <= 1.0
    assert paired_bootstrap_interval(spread, 0.5)[0] > lo, "a narrower level gives a narrower interval"


def test_every_format_shows_the_tau2_outcomes(frame):
    headers = [name for name, _ in columns_for(frame)]
    assert headers[:5] == ["framework", "episodes", "errors", "errored (95% CI)", "reward (95% CI)"]
    assert headers[-1] == "Δ reward vs native (95% CI)" and "user tool calls/ep." not in headers

    markdown = comparison_text(frame, [], None, "markdown").splitlines()
    native_row, twin_row = ([c.strip() for c in line.strip("|").split("|")] for line in markdown[2:4])
    assert dict(zip(headers, native_row))["reward (95% CI)"] == "50.0% (15%–85%)"
    assert dict(zip(headers, native_row))["pass^k (k=1,2,…)"] == "0.50 0.50"
    shown = dict(zip(headers, twin_row))
    assert shown["errored (95% CI)"].startswith("25.0% ") and shown["tool errors/ep."] == "1.00"
    assert shown["Δ reward vs native (95% CI)"].startswith("-16.7% (")
    assert shown["Δ reward vs native (95% CI)"].endswith(" over 3 pairs; 1 errored left out")

    (table,) = comparison_tables(frame, [], None, "t")
    console = Console(file=io.StringIO(), width=600)
    console.print(table)
    assert [c.header for c in table.columns] == headers and "1 errored left out" in console.file.getvalue()

    rows = pd.read_csv(io.StringIO(comparison_text(frame, [], None, "csv")))
    assert list(rows.reward) == pytest.approx([0.5, 0.375]) and list(rows.reward_pairs.fillna(-1)) == [-1, 3]

    records = json.loads(comparison_text(frame, [], None, "json"))["frameworks"]
    assert records[1]["reward_change"] == pytest.approx(-1 / 6) and records[1]["reward_pairs_errored"] == 1
    assert records[0]["reward_pairs"] is None and records[1]["pass_hat_2"] == 0.0


def test_a_user_calling_tools_adds_its_columns(frame):
    with_user = frame.assign(user_tool_calls_per_episode=[0.0, 0.5])
    headers = [name for name, _ in columns_for(with_user)]
    assert headers.index("user tool calls/ep.") == headers.index("tool errors/ep.") + 1



def test_each_framework_row_says_how_often_its_simulated_user_erred_and_in_how_many_failures(store, native_run):
    def with_invented_id(reward):
        return [replace(m, content="My user id is ZX9Y8W, I need a task created.") if m.role == "user" else m
                for m in twin_messages(reward)]

    store.begin_run("faulty", scenario="t", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None,
                    planned=len(TWIN), framework="faulty")
    for episode in store.episodes(native_run):
        reward = TWIN[(episode.key.item_id, episode.key.sample_index)]
        status = "error" if reward is None else "done"
        store.write_episode("faulty", EpisodeOutcome(episode.key, with_invented_id(reward), status,
                                                      "error" if reward is None else "agent_stop",
                                                      "assistant: HTTP 500" if reward is None else None, reward,
                                                      reward=None if reward is None else EpisodeReward(reward, {"DB": reward}, {})))
    store.commit()
    frame = compare_frameworks(store, {"native": native_run, "faulty": "faulty"}, {})
    native, faulty = frame.iloc[0], frame.iloc[1]
    assert (native.fault_any, native.fault_episodes, native.failed_with_fault, native.failed_episodes) == (0.0, 4, 0.0, 2)
    assert (faulty.fault_any, faulty.fault_episodes) == (1.0, 3), "the errored episode is left out"
    assert (faulty.failed_with_fault, faulty.failed_episodes) == (1.0, 2), "rewards 0.5 and 0 failed, 1 did not"
    assert (faulty.failed_with_fault_lo, faulty.failed_with_fault_hi) == pytest.approx(wilson_interval(2, 2))
    header = [h for h, _ in columns_for(frame)]
    assert {"user fault (95% CI)", "failed with user fault (95% CI)"} <= set(header)
