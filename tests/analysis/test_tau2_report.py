"""The τ² report from a hand-built store of synthetic τ²-shaped episodes: rewards, intervals, pass^k,
terminations, tool use and reward parts are the numbers worked out by hand here."""

from __future__ import annotations

import math
import sys

import pytest

from testbed.analysis.tau2 import metrics as tau2_metrics
from testbed.analysis.reports.conversation import conversation_report
from testbed.analysis.reports.render import as_rich_tables, display_rows
from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.metrics import formula_pass_hat_k, pass_hat_k, pass_hat_ks, reward_interval
from testbed.analysis.tau2.report import tau2_report
from testbed.specs.registries import REPORTS
from testbed.store import EpisodeKey, EpisodeOutcome, EpisodeReward
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.store.records import LabelRow
from testbed.transcript import Message, ToolCall, ToolResult
from testbed.store.run_frames import RunFrames

WHO = JudgeIdentity("local", "v1")

# (temperature, task, trial): (reward, termination, communicate part); None reward: the episode errored.
PLAN = {
    (0.0, "task-a", 0): (1.0, "user_stop", 1.0), (0.0, "task-a", 1): (1.0, "user_stop", 1.0),
    (0.0, "task-a", 2): (0.0, "user_stop", 1.0), (0.0, "task-b", 0): (1.0, "user_stop", 1.0),
    (0.0, "task-b", 1): (0.0, "transfer", 1.0), (0.0, "task-b", 2): (0.0, "user_stop", 0.0),
    (1.0, "task-a", 0): (0.0, "agent_stop", 1.0), (1.0, "task-a", 1): (0.0, "agent_stop", 1.0),
    (1.0, "task-a", 2): (0.0, "max_steps", 1.0), (1.0, "task-b", 0): (0.0, "agent_stop", 1.0),
    (1.0, "task-b", 1): (0.0, "max_steps", 1.0), (1.0, "task-b", 2): (None, "error", None),
}


def messages(temperature: float, task: str, trial: int) -> list[Message]:
    """A greeting, a request, then the assistant's tool calls (two with one error in task-a's first cool trial)
    or the user's own tool call with an error (task-a's first hot trial), a reply and a closing user turn."""
    out = [Message("system", "You are an agent.", "assistant", 0), Message("assistant", "Hi, how can I help?", "a", 1),
           Message("user", "Please change my booking.", "u", 2)]
    if (temperature, task, trial) == (0.0, "task-a", 0):
        calls = (ToolCall("c1", "get_booking", '{"id": "x"}'), ToolCall("c2", "update_booking", '{"id": "x"}'))
        out += [Message("assistant", "", "a", 3, tool_calls=calls),
                Message("tool", "{}", "environment", 4, tool_result=ToolResult("c1", "get_booking")),
                Message("tool", "Error: no such booking", "environment", 5, tool_result=ToolResult("c2", "update_booking", error=True))]
    if (temperature, task, trial) == (1.0, "task-a", 0):
        call = ToolCall("u1", "toggle_setting", "{}")
        out += [Message("user", "", "u", 3, tool_calls=(call,)),
                Message("tool", "Error: busy", "environment", 4, tool_result=ToolResult("u1", "toggle_setting", "user", True))]
    return out + [Message("assistant", "Done.", "a", len(out)), Message("user", "Thanks.", "u", len(out) + 1)]


@pytest.fixture
def run(store):
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=len(PLAN))
    for i, ((temperature, task, trial), (reward, end, communicate)) in enumerate(PLAN.items()):
        key = EpisodeKey(f"e{i:02d}", task, "tau2-airline", "a", "m-a", "u", "m-u", "instructed", temperature, trial, "none")
        if reward is None:
            store.write_episode("r", EpisodeOutcome(key, messages(temperature, task, trial)[:3], "error", "error", "user: HTTP 500"))
            continue
        parts = EpisodeReward(reward, {"DB": reward, "COMMUNICATE": communicate}, {})
        store.write_episode("r", EpisodeOutcome(key, messages(temperature, task, trial), "done", end, None, reward, reward=parts))
    store.commit()
    return store


def by_temperature(store, judge=None):
    return tau2_report(RunFrames(store, "r", judge)).set_index("temperature")


def test_rewards_successes_and_their_intervals(run):
    report = by_temperature(run)
    cool, hot = report.loc[0.0], report.loc[1.0]
    assert (cool.episodes, cool.errors, cool.tasks, cool.scored, cool.successes) == (6, 0, 2, 6, 3)
    assert (hot.episodes, hot.errors, hot.tasks, hot.scored, hot.successes) == (6, 1, 2, 5, 0)
    assert cool.reward == pytest.approx(0.5) and hot.reward == 0.0
    assert (cool.reward_lo, cool.reward_hi) == pytest.approx(wilson_interval(3, 6))
    assert cool.reward_interval == hot.reward_interval == "wilson"
    assert 0.0 <= cool.reward_lo < cool.reward < cool.reward_hi <= 1.0
    assert hot.reward_lo == 0.0 and 0.0 < hot.reward_hi < 1.0, "no successes still leaves a width"


def test_pass_hat_k_is_over_the_tasks_up_to_their_fewest_finished_trials(run):
    report = by_temperature(run)
    cool, hot = report.loc[0.0], report.loc[1.0]
    assert cool.pass_hat_1 == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert cool.pass_hat_2 == pytest.approx((1 / 3 + 0) / 2), "task-a: C(2,2)/C(3,2); task-b: C(1,2) = 0"
    assert cool.pass_hat_3 == 0.0
    assert (hot.pass_hat_1, hot.pass_hat_2, hot.pass_hat_3) == (0.0, 0.0, 0.0), "task-b's errored trial is a failed trial"
    left_out = tau2_report(RunFrames(run, "r", None), errored_as="left-out").set_index("temperature").loc[1.0]
    assert math.isnan(left_out.pass_hat_3), "errored episodes left out: task-b has two finished trials, no pass^3"


def test_terminations_are_shares_of_finished_episodes_and_errors_are_counted_apart(run):
    report = by_temperature(run)
    assert report.loc[0.0].end_user_stop == pytest.approx(5 / 6) and report.loc[0.0].end_transfer == pytest.approx(1 / 6)
    assert report.loc[1.0].end_agent_stop == pytest.approx(3 / 5) and report.loc[1.0].end_max_steps == pytest.approx(2 / 5)
    assert "end_error" not in report.columns


def test_tool_use_is_counted_per_side_over_finished_episodes(run):
    report = by_temperature(run)
    cool, hot = report.loc[0.0], report.loc[1.0]
    assert (cool.tool_calls, cool.tool_errors, cool.user_tool_calls, cool.user_tool_errors) == (2, 1, 0, 0)
    assert (hot.tool_calls, hot.tool_errors, hot.user_tool_calls, hot.user_tool_errors) == (0, 0, 1, 1)
    assert cool.tool_calls_per_episode == pytest.approx(2 / 6) and cool.tool_errors_per_episode == pytest.approx(1 / 6)
    assert hot.user_tool_calls_per_episode == pytest.approx(1 / 5)


def test_user_tool_columns_appear_only_when_a_user_called_a_tool(store):
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    key = EpisodeKey("e0", "task-a", "tau2-retail", "a", "m-a", "u", "m-u", "raw", 0.0, 0, "none")
    store.write_episode("r", EpisodeOutcome(key, messages(0.0, "task-a", 0), "done", "user_stop", None, 1.0))
    report = tau2_report(RunFrames(store, "r", None))
    assert "user_tool_calls" not in report.columns and int(report.tool_calls[0]) == 2
    assert not any(c.startswith("breakdown_") for c in report.columns), "no stored reward parts, no breakdown columns"


def test_reward_parts_are_averaged_over_scored_episodes(run):
    report = by_temperature(run)
    assert report.loc[0.0].breakdown_DB == pytest.approx(0.5)
    assert report.loc[0.0].breakdown_COMMUNICATE == pytest.approx(5 / 6)
    assert (report.loc[1.0].breakdown_DB, report.loc[1.0].breakdown_COMMUNICATE) == (0.0, 1.0)


def test_the_user_turn_and_label_columns_are_the_conversation_reports(run):
    turns = run.turns("r")
    first = {t.episode_id: t.turn_index for t in reversed(turns)}
    write_labels(run, "r", WHO, [LabelRow(t.episode_id, t.turn_index, "scored", *(
        ("genuine_followup", True) if first[t.episode_id] == t.turn_index else ("short_filler", False))) for t in turns])
    report = by_temperature(run, WHO)
    conversation = conversation_report(RunFrames(run, "r", WHO)).set_index("temperature")
    shared = [c for c in conversation.columns if not c.startswith("accuracy") and c != "scored"]
    assert report[shared].equals(conversation[shared])
    assert report.loc[0.0].user_turns == 12 and report.loc[0.0].followup_rate == pytest.approx(0.5)
    assert report.loc[0.0].share_genuine_followup == pytest.approx(0.5)
    assert "accuracy" not in report.columns, "the reward stands for the conversation report's accuracy"


def test_a_users_tool_call_is_no_user_turn(run):
    hot = by_temperature(run).loc[1.0]
    assert (hot.user_turns, hot.empty_user_turns) == (10, 0)


def test_the_report_is_registered_and_renders_its_columns(run):
    assert REPORTS.entry("tau2").build is tau2_report
    frame = tau2_report(RunFrames(run, "r", None))
    header, rows = display_rows(frame)
    cool = dict(zip(header, rows[0]))
    assert cool["reward (95% CI)"] == f"50.0% ({wilson_interval(3, 6)[0]:.0%}–{wilson_interval(3, 6)[1]:.0%})"
    assert cool["pass^k (k=1,2,…)"] == "0.50 0.17 0.00"
    assert dict(zip(header, rows[1]))["pass^k (k=1,2,…)"] == "0.00 0.00 0.00"
    assert cool["errored in reward"] == "as 0"
    assert cool["reward parts"] == "COMMUNICATE 0.83, DB 0.50"
    assert cool["tool calls/ep."] == "0.33" and cool["user tool calls/ep."] == "0.00"
    assert "accuracy (95% CI)" not in header
    titles = [t.title for t in as_rich_tables(frame, "r")]
    assert titles[:3] == ["r: episodes", "τ² tasks", "tool use"]


def test_pass_hat_k_is_taus_own_and_the_stand_in_agrees(monkeypatch):
    pytest.importorskip("tau2")
    for n in range(1, 6):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_hat_k(n, c, k) == pytest.approx(formula_pass_hat_k(n, c, k))
    assert tau2_metrics._tau2_pass_hat_k() is not None
    tasks = [(3, 2), (3, 1), (4, 4)]
    with_tau2 = pass_hat_ks(tasks)
    monkeypatch.setitem(sys.modules, "tau2.metrics.agent_metrics", None)
    tau2_metrics._tau2_pass_hat_k.cache_clear()
    try:
        assert tau2_metrics._tau2_pass_hat_k() is None, "a missing τ² falls back to the formula"
        assert pass_hat_ks(tasks) == pytest.approx(with_tau2)
    finally:
        monkeypatch.undo()
        tau2_metrics._tau2_pass_hat_k.cache_clear()
    assert with_tau2 == pytest.approx({1: (2 / 3 + 1 / 3 + 1) / 3, 2: (1 / 3 + 0 + 1) / 3, 3: (0 + 0 + 1) / 3})


def test_success_is_taus_definition():
    pytest.importorskip("tau2")
    from tau2.metrics.agent_metrics import is_successful

    for reward in (1.0, 1 - 1e-7, 1 - 1e-5, 0.5, 0.0):
        assert tau2_metrics.is_success(reward) == is_successful(reward)


def test_rewards_between_0_and_1_get_a_seeded_bootstrap_interval():
    rewards = [0.5, 1.0, 0.0, 0.25, 0.75, 1.0]
    lo, hi, kind = reward_interval(rewards)
    assert kind == "bootstrap" and (lo, hi, kind) == reward_interval(rewards), "seeded: the same every time"
    assert 0.0 <= lo < sum(rewards) / len(rewards) < hi <= 1.0
    assert all(math.isnan(x) for x in reward_interval([0.5])[:2]) and reward_interval([])[2] == "none"


def test_an_empty_run_gives_an_empty_frame_with_the_reward_columns(store):
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=0)
    frame = tau2_report(RunFrames(store, "r", None))
    assert frame.empty and {"reward", "reward_lo", "reward_hi", "tasks", "tool_calls_per_episode"} <= set(frame.columns)


def one_solved_one_errored(store) -> None:
    """A run whose one task was solved once and errored once."""
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=2)
    for trial, reward in enumerate((1.0, None)):
        key = EpisodeKey(f"e{trial}", "task-a", "tau2-mock", "a", "m-a", "u", "m-u", "instructed", 0.0, trial, "none")
        if reward is None:
            store.write_episode("r", EpisodeOutcome(key, messages(0.0, "task-a", 1)[:3], "error", "user_stop", "evaluator failed"))
        else:
            store.write_episode("r", EpisodeOutcome(key, messages(0.0, "task-a", 1), "done", "user_stop", None, reward))
    store.commit()


def test_an_errored_episode_counts_as_a_failed_task_unless_left_out(store):
    one_solved_one_errored(store)
    (zero,) = tau2_report(RunFrames(store, "r", None)).itertuples()
    assert (zero.reward, zero.successes, zero.pass_hat_1, zero.scored) == (0.5, 1, 0.5, 1), "τ²'s runner: a failure scores 0"
    assert zero.reward_errored_as == "zero" and zero.error_share == 0.5
    (left,) = tau2_report(RunFrames(store, "r", None), errored_as="left-out").itertuples()
    assert (left.reward, left.successes, left.pass_hat_1) == (1.0, 1, 1.0) and left.reward_errored_as == "left-out"
    assert left.error_share == 0.5, "the share errored is shown beside either convention"


def test_the_report_command_takes_the_convention_and_refuses_it_where_there_is_no_reward(store):
    from typer.testing import CliRunner

    from testbed.cli.app import app as cli

    one_solved_one_errored(store)
    store.begin_run("p", scenario="s", kind="probe", spec={}, fingerprint="g", versions={}, git_revision=None, planned=1)
    key = EpisodeKey("p0", "item", "gsm8k", "a", "m-a", "u", "m-u", "instructed", 0.0, 0, "none")
    store.write_episode("p", EpisodeOutcome(key, messages(0.0, "task-b", 0), "done", "max_turns", None, 1.0))
    store.commit()
    shown = CliRunner().invoke(cli, ["report", "r", "-f", "csv", "--errored", "left-out", "--store", str(store.path)])
    assert shown.exit_code == 0, shown.output
    assert "left-out" in shown.output and ",1.0," in shown.output
    wrong = CliRunner().invoke(cli, ["report", "r", "--errored", "half", "--store", str(store.path)])
    assert wrong.exit_code != 0 and "unknown --errored 'half'; use one of zero, left-out" in wrong.output
    probe = CliRunner().invoke(cli, ["report", "p", "--errored", "zero", "--store", str(store.path)])
    assert probe.exit_code != 0 and "only τ² runs have rewards" in probe.output, probe.output
