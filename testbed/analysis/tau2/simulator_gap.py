"""The simulator gap: what a model user costs an assistant, measured against the scripted user on the same tasks.

The scripted τ² user (testbed.scenarios.tau2.scripted_user) follows its task and cannot speak as the agent, so an
assistant's reward against it is the agent's alone. Where a run (a τ² users sweep, `users: [MODEL, scripted]`) or a
comparison holds an assistant's episodes with both users, the gap is the reward with the model user minus the reward
with the scripted user, paired by task: each side's mean reward per task (over its trials, user modes and
temperatures; errored episodes as the τ² report counts them), the difference taken task by task on the tasks both
have, with a 95 % paired bootstrap interval over tasks. A negative gap is reward the simulated user lost.
"""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.tau2.metrics import ERRORED_AS, counted_rewards, paired_bootstrap_interval
from testbed.scenarios.tau2.scripted_user import SCRIPTED_USER_MODEL
from testbed.store import Store
from testbed.store.frames import episodes_df
GAP_COLUMNS = ["scripted_reward", "simulator_gap", "simulator_gap_lo", "simulator_gap_hi", "gap_tasks"]
"""The report columns of the gap, on each model user's rows: the scripted user's reward on the shared tasks, the
paired difference with its interval, and how many tasks it pairs."""


def task_rewards(episodes: pd.DataFrame, errored_as: str = ERRORED_AS[0]) -> pd.Series:
    """Each task's mean reward over its episodes (errored ones as `errored_as` says), by item id."""
    counted = counted_rewards(episodes, errored_as)
    return counted.groupby("item_id").task_score.mean().astype(float)


def simulator_gap(model_user: pd.DataFrame, scripted_user: pd.DataFrame, errored_as: str = ERRORED_AS[0]) -> dict:
    """The gap columns (GAP_COLUMNS) of one assistant's episodes with a model user against its episodes with the
    scripted user: NaN with `gap_tasks` 0 when they share no task with a reward."""
    mine, baseline = task_rewards(model_user, errored_as), task_rewards(scripted_user, errored_as)
    shared = sorted(set(mine.index) & set(baseline.index))
    differences = [float(mine[t] - baseline[t]) for t in shared]
    lo, hi = paired_bootstrap_interval(differences)
    return {"scripted_reward": float(baseline[shared].mean()) if shared else math.nan,
            "simulator_gap": sum(differences) / len(differences) if differences else math.nan,
            "simulator_gap_lo": lo, "simulator_gap_hi": hi, "gap_tasks": len(shared)}


def is_scripted_user(episodes: pd.DataFrame) -> pd.Series:
    """Which episodes the scripted user played."""
    return episodes.user_model == SCRIPTED_USER_MODEL


def gap_of_group(group: pd.DataFrame, episodes: pd.DataFrame, errored_as: str = ERRORED_AS[0]) -> dict:
    """The gap columns of one report group (one assistant with one model user, mode and temperature) against the
    scripted user's episodes of the same run, assistant and domain; none when the group is the scripted user's or
    the run has no scripted-user episodes for its assistant."""
    if group.empty or is_scripted_user(group).all():
        return {}
    first = group.iloc[0]
    scripted = episodes[is_scripted_user(episodes) & (episodes.assistant_model == first.assistant_model)
                        & (episodes.assistant_agent == first.assistant_agent) & (episodes.dataset == first.dataset)]
    return simulator_gap(group, scripted, errored_as) if len(scripted) else {}


def gap_between_runs(store: Store, run_id: str, scripted_run_id: str, errored_as: str = ERRORED_AS[0]) -> dict:
    """The gap columns of a run with a model user against its assistant's run with the scripted user (`testbed compare
    --simulator-gap`), paired by task on the tasks both runs have."""
    return simulator_gap(episodes_df(store, run_id, exact=True), episodes_df(store, scripted_run_id, exact=True), errored_as)
