"""τ² outcomes in the framework comparison: each framework's task reward, pass^k and tool use, and its reward
against `native` on the same task × trial.

A framework's reward counts each errored episode as a failed task with reward 0, as the τ² report does by default
(τ²'s runner's convention), with the share errored beside it (`error_share`); the paired difference against
native leaves out a pair where either side errored and counts it (`reward_pairs_errored`). The metrics are testbed.analysis.tau2.metrics's, so the comparison and the τ²
report give the same number for the same run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.metrics import (ToolCounts, counted_rewards, is_success, paired_bootstrap_interval, pass_hat_ks,
                                          reward_interval, run_tool_counts)
from testbed.store.run_frames import RunFrames

TASK_CONDITION = ["item_id", "user_mode", "temperature"]
"""What makes one τ² task for pass^k: the task under one user mode and temperature; its trials are the samples."""
TOOL_SIDES = {"tool": "assistant", "user_tool": "user"}
"""Column prefix → the side whose tool use it counts (the user's: τ²'s telecom phone)."""


def tau2_columns(run: RunFrames) -> dict:
    """One framework's τ² outcomes: the mean reward (errored episodes counting 0) with its 95 % interval (Wilson's on successes when every reward
    is 0 or 1, else a seeded bootstrap; `reward_interval` says which), τ²'s pass^k for k up to the fewest scored
    trials of any task (`pass_hat_<k>`), tool calls and errors per finished episode on each side, and the share of
    episodes that errored with its Wilson interval, from the run's frames."""
    episodes = run.episodes
    scored = counted_rewards(episodes)
    rewards = [float(r) for r in scored.task_score]
    lo, hi, kind = reward_interval(rewards)
    errors, n = int((episodes.status == "error").sum()), len(episodes)
    error_lo, error_hi = wilson_interval(errors, n)
    out = {"scored": int(((episodes.status == "done") & episodes.task_score.notna()).sum()), "successes": sum(map(is_success, rewards)),
           "reward": sum(rewards) / len(rewards) if rewards else math.nan, "reward_lo": lo, "reward_hi": hi,
           "reward_interval": kind, "error_share": errors / n if n else math.nan, "error_lo": error_lo, "error_hi": error_hi}
    per_task = [(len(s), sum(map(is_success, s.task_score))) for _, s in scored.groupby(TASK_CONDITION, dropna=False)]
    out.update({f"pass_hat_{k}": v for k, v in pass_hat_ks(per_task).items()})
    counts = run_tool_counts(run)
    done = [counts.get(eid, ToolCounts()) for eid in episodes[episodes.status == "done"].episode_id]
    for prefix, side in TOOL_SIDES.items():
        for what in ("calls", "errors"):
            total = sum(getattr(c, f"{side}_{what}") for c in done)
            out[f"{prefix}_{what}_per_episode"] = total / len(done) if done else math.nan
    return out


def tau2_fault_columns(run: RunFrames) -> dict:
    """The simulated user's faults under one framework (testbed.analysis.tau2.faults, the τ² report's rates): the share
    of finished episodes with any fault and the share of failed ones with a fault, each with its Wilson interval,
    and their counts; role drift counts when the run's judge labelled it."""
    from testbed.analysis.tau2.faults import fault_frame, fault_rates

    rates = fault_rates(fault_frame(run), run.judge is not None)
    return {k: v for k, v in rates.items() if k.startswith(("fault_any", "failed_with_fault", "fault_episodes", "failed_episodes"))}


def tau2_paired_with_native(native: pd.DataFrame, other: pd.DataFrame, shared: Sequence[str]) -> dict:
    """Reward of `other` minus `native` on the episodes both runs have (`shared`: their ids, as
    framework_compare.shared_episodes pairs them: same task, user mode, temperature and trial), with a 95 % paired
    bootstrap interval and the number of pairs. A pair where either side errored is left out and counted
    (`reward_pairs_errored`), as is one where both finished but a side has no reward (`reward_pairs_unscored`)."""
    mine, theirs = other.set_index("episode_id"), native.set_index("episode_id")
    differences, errored, unscored = [], 0, 0
    for eid in shared:
        a, b = mine.loc[eid], theirs.loc[eid]
        if a.status == "error" or b.status == "error":
            errored += 1
        elif pd.isna(a.task_score) or pd.isna(b.task_score):
            unscored += 1
        else:
            differences.append(float(a.task_score) - float(b.task_score))
    lo, hi = paired_bootstrap_interval(differences)
    return {"reward_pairs": len(differences), "reward_pairs_errored": errored, "reward_pairs_unscored": unscored,
            "reward_change": sum(differences) / len(differences) if differences else math.nan,
            "reward_change_lo": lo, "reward_change_hi": hi}
