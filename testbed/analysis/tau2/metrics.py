"""τ² task metrics: success as τ² defines it, pass^k over repeated trials, the reward's interval, tool
use counted from stored messages, and how much of the spread over trials each side's seed makes."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from testbed.analysis.stats import wilson_interval
from testbed.specs.tau2 import VARY_SEEDS_KEY
from testbed.store import Store
from testbed.transcript import is_assistant, is_user

SUCCESS_TOLERANCE = 1e-6
"""τ²'s tolerance around a reward of 1 (tau2.metrics.agent_metrics.is_successful)."""
BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the percentile bootstrap used for rewards that are not all 0 or 1."""


ERRORED_AS = ("zero", "left-out")
"""How a τ² reward treats an errored episode: `zero` (the default) counts it as a failed task with reward 0, as τ²'s
runner counts a failed simulation, so the figure is comparable with τ²'s leaderboard; `left-out` averages the
finished episodes only (the share errored is shown beside either)."""


def counted_rewards(episodes: pd.DataFrame, errored_as: str = ERRORED_AS[0]) -> pd.DataFrame:
    """The episodes a reward averages, each with its `task_score`: finished episodes with a reward and, under
    `zero`, every errored episode with a reward of 0 (an unscored finished episode is in neither)."""
    if errored_as not in ERRORED_AS:
        raise ValueError(f"errored episodes count as one of {', '.join(ERRORED_AS)}, not {errored_as!r}")
    scored = episodes[(episodes.status == "done") & episodes.task_score.notna()]
    if errored_as == "left-out":
        return scored
    errored = episodes[episodes.status == "error"].assign(task_score=0.0)
    return pd.concat([scored, errored]) if len(errored) else scored


def is_success(reward: float) -> bool:
    """Whether a reward counts as solving the task: within τ²'s tolerance of 1, as its `is_successful` says."""
    return abs(reward - 1.0) <= SUCCESS_TOLERANCE


def formula_pass_hat_k(num_trials: int, success_count: int, k: int) -> float:
    """pass^k of one task (Yao et al. 2024, τ-bench): the chance that k trials drawn without replacement from
    its `num_trials` all succeed, C(c, k) / C(n, k). τ²'s own function computes the same; this one stands in
    when τ² is not installed."""
    if num_trials < k:
        raise ValueError(f"Number of trials {num_trials} is less than k {k}.")
    return math.comb(success_count, k) / math.comb(num_trials, k)


@functools.cache
def _tau2_pass_hat_k() -> Callable[[int, int, int], float] | None:
    """τ²'s pass^k, imported on first use with its import-time log lines (a missing .env file) silenced; None
    when τ² (an optional extra) is not installed."""
    try:
        from loguru import logger

        logger.disable("tau2")
        from tau2.metrics.agent_metrics import pass_hat_k
    except ImportError:
        return None
    return pass_hat_k


def pass_hat_k(num_trials: int, success_count: int, k: int) -> float:
    """pass^k of one task by τ²'s own function (`formula_pass_hat_k` when τ² is not installed)."""
    own = _tau2_pass_hat_k()
    return (own or formula_pass_hat_k)(num_trials, success_count, k)


def pass_hat_ks(tasks: Sequence[tuple[int, int]]) -> dict[int, float]:
    """pass^k for k = 1 … the fewest trials any task has, each the mean over `tasks` ((trials, successes) per
    task, every task with at least one trial), as τ² computes it: a k above some task's trials is left out
    rather than averaged over a smaller set of tasks, so every k is over the same tasks."""
    if not tasks:
        return {}
    most = min(n for n, _ in tasks)
    return {k: sum(pass_hat_k(n, c, k) for n, c in tasks) / len(tasks) for k in range(1, most + 1)}


def reward_interval(rewards: Sequence[float], z: float = 1.959964) -> tuple[float, float, str]:
    """A 95 % interval for the mean reward, and which kind it is.

    Rewards that are all 0 or 1 (within τ²'s tolerance) are successes out of trials: a Wilson interval, which
    stays inside [0, 1] and keeps a width at 0 or all successes (`wilson`). Otherwise a percentile bootstrap
    of the mean, seeded so a report is reproducible (`bootstrap`); it needs two rewards. No rewards: nan.
    """
    n = len(rewards)
    if n == 0:
        return math.nan, math.nan, "none"
    x = np.asarray(rewards, dtype=float)
    if bool(np.all((np.abs(x) <= SUCCESS_TOLERANCE) | (np.abs(x - 1) <= SUCCESS_TOLERANCE))):
        return (*wilson_interval(sum(map(is_success, rewards)), n, z), "wilson")
    if n < 2:
        return math.nan, math.nan, "bootstrap"
    rng = np.random.default_rng(0)
    chunk = max(1, 1_000_000 // n)
    means = np.concatenate([x[rng.integers(0, n, size=(min(chunk, BOOTSTRAP_RESAMPLES - done), n))].mean(axis=1)
                            for done in range(0, BOOTSTRAP_RESAMPLES, chunk)])
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi), "bootstrap"


def bootstrap_means(differences: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """The seeded bootstrap distribution of the mean of paired differences, pairs resampled whole (drawn in chunks of
    about a million values); empty with fewer than two pairs. Intervals and one-sided tests are read off it."""
    n = len(differences)
    if n < 2:
        return np.array([])
    x = np.asarray(differences, dtype=float)
    rng = np.random.default_rng(0)
    chunk = max(1, 1_000_000 // n)
    return np.concatenate([x[rng.integers(0, n, size=(min(chunk, resamples - start), n))].mean(axis=1)
                           for start in range(0, resamples, chunk)])


def paired_bootstrap_interval(differences: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of paired differences: pairs are resampled whole, so what the
    two sides share (the task, the trial's luck) stays in each pair. Seeded like `reward_interval`'s bootstrap so
    a comparison is reproducible; it needs two pairs (nan otherwise). `level` is the interval's coverage."""
    means = bootstrap_means(differences)
    if not len(means):
        return math.nan, math.nan
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


@dataclass
class ToolCounts:
    """One episode's tool use: calls made and calls answered with an error, on each side of a dual-control task."""

    assistant_calls: int = 0
    """Tools the assistant called."""
    assistant_errors: int = 0
    """Tool results answering the assistant that were errors."""
    user_calls: int = 0
    """Tools the simulated user called (τ²'s telecom: the user's phone)."""
    user_errors: int = 0
    """Tool results answering the user that were errors."""


def episode_tool_counts(messages: Iterable) -> ToolCounts:
    """The tool use in one episode's messages (testbed.transcript.Message): calls by the role that wrote them,
    errors by the requestor their result names."""
    out = ToolCounts()
    for m in messages:
        if is_assistant(m):
            out.assistant_calls += len(m.tool_calls)
        elif is_user(m):
            out.user_calls += len(m.tool_calls)
        elif m.tool_result is not None and m.tool_result.error:
            if m.tool_result.requestor == "user":
                out.user_errors += 1
            else:
                out.assistant_errors += 1
    return out


def tool_counts(store: Store, run_id: str) -> dict[str, ToolCounts]:
    """Every finished episode's tool use that has messages, by episode id; the messages are streamed in
    batches and only the four counts kept."""
    return {eid: episode_tool_counts(messages) for eid, messages in store.iter_messages(run_id)}


def run_tool_counts(run) -> dict[str, ToolCounts]:
    """`tool_counts` of a run's frames (`RunFrames`), counted once per run however many tables ask."""
    return run.derived("tau2 tool counts", lambda: tool_counts(run.store, run.run_id))


VARY_BOTH = "both"
VARIED_SIDES = ("user", "assistant")
"""The `vary_seeds` values that hold one side fixed: the seed reliability columns compare these two."""


@dataclass(frozen=True)
class EpisodeSeeding:
    """How one episode's seeds were chosen, as its stored messages record it."""

    vary_seeds: str
    """Whose seed varied across the task's trials (testbed.specs.tau2.VarySeeds): `user`, `assistant` or `both`."""
    temperature: float
    """The highest sampling temperature any of its generated messages asked for (either side); nan when none says."""


def episode_seeding(messages: Iterable) -> EpisodeSeeding:
    """An episode's seeding from its messages: `vary_seeds` in a generated message's sampling (absent: `both`, as
    every episode of a run without the field), and its highest sampling temperature."""
    vary, temperatures = VARY_BOTH, []
    for m in messages:
        if m.sampling:
            vary = m.sampling.get(VARY_SEEDS_KEY, vary)
            if isinstance(m.sampling.get("temperature"), (int, float)):
                temperatures.append(float(m.sampling["temperature"]))
    return EpisodeSeeding(vary, max(temperatures) if temperatures else math.nan)


def run_seeding(store: Store, run_id: str) -> dict[str, EpisodeSeeding]:
    """Every finished episode's seeding, by episode id, messages streamed in batches."""
    return {eid: episode_seeding(messages) for eid, messages in store.iter_messages(run_id)}


def trial_variance(rewards_by_task: Iterable[Sequence[float]]) -> tuple[float, int]:
    """The mean over tasks of the variance of reward across a task's trials (the unbiased one, n − 1), and how
    many tasks it is over: a task with fewer than two trials has no spread to measure and is left out (nan: none)."""
    spreads = [float(np.var(np.asarray(r, dtype=float), ddof=1)) for r in rewards_by_task if len(r) >= 2]
    return (sum(spreads) / len(spreads) if spreads else math.nan), len(spreads)


RELIABILITY_COLUMNS = ["vary_seeds", "tasks", "trials", "trial_variance", "variance_tasks"]
"""`seed_reliability`'s columns after the condition group; `pass_hat_<k>` follow."""


def seed_reliability(store: Store, run_id: str, episodes: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """One row per condition `group` × `vary_seeds` of a τ² run's scored finished episodes (`episodes`: the run's
    episodes_df): tasks, the fewest trials of any task, the mean across-trial reward variance
    (`trial_variance`, over `variance_tasks` tasks with two trials or more), τ²'s pass^k up to the fewest trials,
    and the highest sampling temperature any message of the row asked for (`max_temperature`)."""
    seeding = run_seeding(store, run_id)
    scored = episodes[(episodes.status == "done") & episodes.task_score.notna()]
    scored = scored.assign(vary_seeds=[seeding[e].vary_seeds if e in seeding else VARY_BOTH for e in scored.episode_id],
                           max_temperature=[seeding[e].temperature if e in seeding else math.nan for e in scored.episode_id])
    rows = []
    for keys, g in scored.groupby([*group, "vary_seeds"], sort=True, dropna=False):
        per_task = [[float(r) for r in t.task_score] for _, t in g.groupby("item_id")]
        variance, counted = trial_variance(per_task)
        rows.append({**dict(zip([*group, "vary_seeds"], keys)), "tasks": len(per_task), "trials": min(map(len, per_task)),
                     "trial_variance": variance, "variance_tasks": counted, "max_temperature": g.max_temperature.max(),
                     **{f"pass_hat_{k}": v for k, v in pass_hat_ks([(len(r), sum(map(is_success, r))) for r in per_task]).items()}})
    return pd.DataFrame(rows, columns=None if rows else [*group, *RELIABILITY_COLUMNS])


ZERO_SPREAD_AT_T0 = ("every message was sampled at temperature 0: on a deterministic server seeds change nothing, so no "
                     "spread over trials is expected")
"""The reliability note of a condition whose trials do not spread at all when nothing was sampled above temperature 0."""
ZERO_SPREAD = "no spread over trials under either seed"
"""The reliability note of a condition whose trials do not spread at all although something was sampled above 0."""


def reliability_columns(store: Store, run_id: str, episodes: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """The seed reliability of a τ² run side by side, one row per condition `group`: for `vary_seeds` user and
    assistant (and both, when the run has it too) `vary_<side>_pass_hat_<k>`, `vary_<side>_trial_variance` and
    `vary_<side>_trials`; `user_variance_share`, the user-varied spread's share of the two one-sided spreads
    (var_user / (var_user + var_assistant): a ratio, not an additive split, since the sides may interact); and
    `vary_note` when no trials spread. Only the group columns when the run varied no single side."""
    long = seed_reliability(store, run_id, episodes, group)
    if long.empty or not long.vary_seeds.isin(VARIED_SIDES).any():
        return pd.DataFrame(columns=list(group))
    rows = []
    for keys, g in long.groupby(list(group), sort=True, dropna=False):
        row = dict(zip(group, keys if isinstance(keys, tuple) else (keys,)))
        for r in g.itertuples(index=False):
            side = r._asdict()
            row[f"vary_{r.vary_seeds}_trials"] = r.trials
            row[f"vary_{r.vary_seeds}_trial_variance"] = r.trial_variance
            row.update({f"vary_{r.vary_seeds}_{c}": v for c, v in side.items() if c.startswith("pass_hat_") and v == v})
        user, assistant = (row.get(f"vary_{s}_trial_variance", math.nan) for s in VARIED_SIDES)
        row["user_variance_share"] = user / (user + assistant) if user + assistant > 0 else math.nan
        spreads = [v for v in g.trial_variance if v == v]
        still = bool(spreads) and all(v == 0 for v in spreads)
        row["vary_note"] = (ZERO_SPREAD_AT_T0 if g.max_temperature.max() == 0 else ZERO_SPREAD) if still else ""
        rows.append(row)
    return pd.DataFrame(rows)


def with_seed_reliability(report: pd.DataFrame, store: Store, run_id: str, episodes: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """`report` (one row per condition `group`) with `reliability_columns` joined on, when the run varied one side."""
    reliability = reliability_columns(store, run_id, episodes, group)
    return report if reliability.empty else report.merge(reliability, on=list(group), how="left")
