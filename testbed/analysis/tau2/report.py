"""The τ² report: per domain × assistant × user × user mode × temperature, the tasks' rewards and pass^k,
how episodes ended, tool use, the reward's parts, the simulated user's faults, and the conversation report's
user-turn and label columns."""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.reports.conversation import GROUP, conversation_report
from testbed.analysis.tau2.fault_error_rates import load_detector_errors
from testbed.analysis.tau2.faults import (FAULT_RATE_COLUMNS, REVIEW_RATE_COLUMNS, fault_frame, fault_rates, review_rates,
                                          reviewed_faults, turn_faults)
from testbed.analysis.tau2.headline import HEADLINE_COLUMNS, headline_cells
from testbed.analysis.tau2.metrics import (ERRORED_AS, ToolCounts, counted_rewards, is_success, pass_hat_ks,
                                          reward_interval, run_tool_counts, with_seed_reliability)
from testbed.analysis.tau2.simulator_gap import GAP_COLUMNS, gap_of_group
from testbed.analysis.tau2.user_review import USER_REVIEW_COLUMNS, reviewed_turns, rules_source, user_review_cells
from testbed.specs.registries import ReportEntry
from testbed.store.run_frames import RunFrames

REWARD_COLUMNS = ["tasks", "scored", "successes", "reward", "reward_lo", "reward_hi", "reward_interval", "reward_errored_as",
                  "error_share"]
"""The τ² columns that lead, after the conversation report's episodes and errors; pass^k and the reward's parts follow."""
TOOL_COLUMNS = [f"{side}_{what}" for side in ("tool", "user_tool")
                for what in ("calls", "errors", "calls_per_episode", "errors_per_episode")]
"""Tool use, the assistant's then the user's (those only when a user called a tool), after the reward's parts."""
REPLACED = ["accuracy", "accuracy_lo", "accuracy_hi", "scored"]
"""Conversation-report columns the reward columns stand for (its accuracy is the mean task score)."""


def tau2_report(run: RunFrames, errored_as: str = ERRORED_AS[0]) -> pd.DataFrame:
    """One row per condition group of a τ² run's frames under their judge (the dataset column is the domain, `tau2-<domain>`).

    The reward, successes and pass^k count each errored episode as a failed task with reward 0 (`errored_as`
    `zero`, τ²'s runner's and the leaderboard's convention), or leave errored episodes out (`left-out`);
    `reward_errored_as` says which, `error_share` is the share of the group's episodes that errored, and `scored`
    counts the finished episodes with a reward. The other rates exclude errored episodes, which `errors` counts:
    tool use is over finished episodes. The reward's 95 % interval is Wilson's on successes
    when every reward is 0 or 1, else a seeded bootstrap (`reward_interval` says which). `pass_hat_<k>` is τ²'s pass^k over the group's
    tasks for k up to the fewest finished trials of any of them (NaN above it); `breakdown_<part>` the mean
    of each reward part over the episodes scored on it; `user_tool_*` columns appear when a user called a
    tool anywhere in the run; `vary_<side>_*` columns (tau2_metrics.reliability_columns) when the run held one
    side's seed fixed across trials (`vary_seeds`), the rows themselves pooling every vary_seeds. `fault_<kind>`
    is the share of finished episodes with that simulated-user fault (testbed.analysis.tau2.faults; `_lo`/`_hi`
    Wilson bounds; role drift needs a judge), `fault_any` the share with any, and `failed_with_fault` the share
    of failed finished episodes (reward short of 1) with any: how much of the failure the simulator may carry. When a
    reviewer judged the flagged faults (`testbed review-faults`), `fault_hindered` is the share of reviewed faults it
    judged hindering the agent and `failed_hindered` the share of failed episodes with a hindering fault (each with
    Wilson bounds, beside the counts reviewed and unscored: tau2_faults.review_rates). `fault_source` names the rules
    (and the judge) that found the faults. When a whole-conversation reviewer reviewed the run (`review-faults --whole`),
    `review_error`, `review_hindered`, `review_helped` are the shares of its scored episodes with an error it tagged, a
    critical_hindered one and a critical_helped one, `review_source` is its identity, and `agree_<tag>_*` the rules'
    agreement with it per user turn (testbed.analysis.tau2.user_review). The headline shares (`failed_hindered_review`,
    `success_helped_review`, `rules_any`: raw, and corrected with the detector's measured error from
    judges/faults-gold/error-rates.json, with the detector named) are testbed.analysis.tau2.headline's. Where the run also seats the
    scripted user with the group's assistant (a users sweep), a model user's rows have the simulator gap
    (testbed.analysis.tau2.simulator_gap: `scripted_reward`, `simulator_gap` with `_lo`/`_hi`, `gap_tasks`). The rest
    (terminations as `end_<reason>`, user turns, follow-up rate, label shares, drift) is
    testbed.analysis.reports.conversation's.
    """
    store, run_id, judge = run.store, run.run_id, run.judge
    episodes = run.episodes
    conversation = conversation_report(run)
    if episodes.empty:
        return pd.DataFrame(columns=[*GROUP, "episodes", "errors", *REWARD_COLUMNS, *TOOL_COLUMNS[:4], *FAULT_RATE_COLUMNS])
    counts = run_tool_counts(run)
    faults = fault_frame(run).set_index("episode_id")
    breakdowns = dict(zip(run.rewards.episode_id, run.rewards.breakdown))
    users_call = any(c.user_calls for c in counts.values())
    reviews = reviewed_faults(run)
    review = reviewed_turns(run)
    rule_turns = turn_faults(run) if review is not None else None
    errors = load_detector_errors()
    rows = [{**_row(dict(zip(GROUP, keys)), g, counted_rewards(g, errored_as), counts, breakdowns, users_call, errored_as),
             **gap_of_group(g, episodes, errored_as),
             **fault_rates(faults.loc[g.episode_id], judge is not None), "fault_source": rules_source(judge),
             **_severity(faults.loc[g.episode_id], reviews),
             **user_review_cells(faults.loc[g.episode_id], rule_turns, review, judge is not None),
             **headline_cells(faults.loc[g.episode_id], review, errors, reviews)}
            for keys, g in episodes.groupby(GROUP, sort=True, dropna=False)]
    tau2 = pd.DataFrame(rows)
    tau2 = tau2[[*GROUP, *sorted(tau2.columns.difference(GROUP), key=_column_order)]]
    tau2 = with_seed_reliability(tau2, store, run_id, episodes, GROUP)
    conversation = conversation.drop(columns=[c for c in REPLACED if c in conversation])
    lead = conversation[[*GROUP, "episodes", "errors"]]
    return lead.merge(tau2, on=GROUP, how="left").merge(conversation.drop(columns=["episodes", "errors"]), on=GROUP, how="left")


def _severity(faults: pd.DataFrame, reviews) -> dict:
    """A group's fault-severity columns, when a reviewer reviewed the run's faults; none otherwise."""
    if reviews is None:
        return {}
    reviewer, reviewed = reviews
    return review_rates(faults, reviewed, reviewer)


def _column_order(column: str) -> tuple:
    """Where a τ² column goes: the reward first, then pass^k by k, the reward's parts, tool use, the user's faults
    and their reviewed severity."""
    if column.startswith("pass_hat_"):
        return (1, int(column.removeprefix("pass_hat_")), "")
    if column.startswith("breakdown_"):
        return (2, 0, column)
    if column in REWARD_COLUMNS:
        return (0, REWARD_COLUMNS.index(column), "")
    if column in GAP_COLUMNS:
        return (0, len(REWARD_COLUMNS) + GAP_COLUMNS.index(column), "")
    if column in FAULT_RATE_COLUMNS:
        return (4, FAULT_RATE_COLUMNS.index(column), "")
    if column == "fault_source":
        return (4, len(FAULT_RATE_COLUMNS), "")
    if column in REVIEW_RATE_COLUMNS:
        return (5, REVIEW_RATE_COLUMNS.index(column), "")
    if column in USER_REVIEW_COLUMNS:
        return (6, USER_REVIEW_COLUMNS.index(column), "")
    if column in HEADLINE_COLUMNS:
        return (7, HEADLINE_COLUMNS.index(column), "")
    return (3, TOOL_COLUMNS.index(column), "")


def _row(keys: dict, group: pd.DataFrame, counted: pd.DataFrame, counts: dict[str, ToolCounts],
         breakdowns: dict[str, dict[str, float]], users_call: bool, errored_as: str) -> dict:
    done = group[group.status == "done"]
    scored = done[done.task_score.notna()]
    rewards = [float(r) for r in counted.task_score]
    lo, hi, kind = reward_interval(rewards)
    row = {**keys, "tasks": group.item_id.nunique(), "scored": len(scored), "successes": sum(map(is_success, rewards)),
           "reward": sum(rewards) / len(rewards) if rewards else math.nan,
           "reward_lo": lo, "reward_hi": hi, "reward_interval": kind, "reward_errored_as": errored_as,
           "error_share": float((group.status == "error").mean())}
    per_task = [(len(s), sum(map(is_success, s.task_score))) for _, s in counted.groupby("item_id")]
    row.update({f"pass_hat_{k}": v for k, v in pass_hat_ks(per_task).items()})
    parts: dict[str, list[float]] = {}
    for eid in scored.episode_id:
        for part, value in breakdowns.get(eid, {}).items():
            parts.setdefault(part, []).append(float(value))
    row.update({f"breakdown_{part}": sum(v) / len(v) for part, v in sorted(parts.items())})
    tools = [counts.get(eid, ToolCounts()) for eid in done.episode_id]
    n = len(tools)
    sides = [("tool", "assistant")] + ([("user_tool", "user")] if users_call else [])
    for prefix, side in sides:
        calls, errors = sum(getattr(t, f"{side}_calls") for t in tools), sum(getattr(t, f"{side}_errors") for t in tools)
        row.update({f"{prefix}_calls": calls, f"{prefix}_errors": errors,
                    f"{prefix}_calls_per_episode": calls / n if n else math.nan,
                    f"{prefix}_errors_per_episode": errors / n if n else math.nan})
    return row


TAU2_REPORT = ReportEntry("tau2", tau2_report, options=("errored_as",))
"""τ²-bench's report entry."""
