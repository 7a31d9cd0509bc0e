"""τ² task metrics: success as τ² defines it, pass^k over repeated trials, the reward's interval, and tool
use counted from stored messages."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from testbed.analysis.stats import wilson_interval
from testbed.store import Store

SUCCESS_TOLERANCE = 1e-6
"""τ²'s tolerance around a reward of 1 (tau2.metrics.agent_metrics.is_successful)."""
BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the percentile bootstrap used for rewards that are not all 0 or 1."""


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
        if m.role == "assistant":
            out.assistant_calls += len(m.tool_calls)
        elif m.role == "user":
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
