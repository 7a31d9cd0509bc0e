"""How `testbed compare` shows a τ² comparison's own cells (testbed.analysis.tau2.compare): headers and formatters.

The comparison's renderers (testbed.analysis.reports.compare_render) put the first list of `compare_columns` after
the episodes and errors every comparison shows, and the second last; they know nothing of τ² themselves.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from testbed.analysis.reports.compare_render import _absent, _num, _rate, _signed

Column = tuple[str, Callable[[pd.Series], str]]


def _pass_hat_text(r: pd.Series) -> str:
    values = sorted((int(c.removeprefix("pass_hat_")), r[c]) for c in r.index if c.startswith("pass_hat_") and not _absent(r[c]))
    return " ".join(f"{v:.2f}" for _, v in values) or "n/a"


def _reward_change(r: pd.Series) -> str:
    """`+25.0% (-50%–+100%) over 3 pairs; 1 errored left out`: the paired reward difference, its pairs and what was left out."""
    pairs = r.get("reward_pairs")
    if _absent(pairs):
        return "n/a"
    interval = "" if _absent(r.reward_change_lo) else f" ({r.reward_change_lo:+.0%}–{r.reward_change_hi:+.0%})"
    parts = [f"{_signed(r.reward_change)}{interval} over {int(pairs)} pairs"]
    left_out = {"errored": r.reward_pairs_errored, "unscored": r.reward_pairs_unscored}
    parts += [f"{int(n)} {what} left out" for what, n in left_out.items() if n]
    return "; ".join(parts)


def _simulator_gap(r: pd.Series) -> str:
    """`-0.25 (-0.50 to +0.00) over 3 tasks`: the paired reward difference to the scripted user; blank on rows without."""
    tasks = r.get("gap_tasks")
    if _absent(tasks):
        return ""
    if _absent(r.simulator_gap):
        return "n/a"
    interval = "" if _absent(r.simulator_gap_lo) else f" ({r.simulator_gap_lo:+.2f} to {r.simulator_gap_hi:+.2f})"
    return f"{r.simulator_gap:+.2f}{interval} over {int(tasks)} tasks"


OUTCOME_COLUMNS: list[Column] = [
    ("errored (95% CI)", lambda r: _rate(r, "error_share", "error_lo", "error_hi")),
    ("reward (95% CI)", lambda r: _rate(r, "reward", "reward_lo", "reward_hi")),
    ("scored", lambda r: str(r.scored)),
    ("pass^k (k=1,2,…)", lambda r: _pass_hat_text(r)),
    ("tool calls/ep.", lambda r: _num(r.tool_calls_per_episode, "{:.2f}")),
    ("tool errors/ep.", lambda r: _num(r.tool_errors_per_episode, "{:.2f}")),
]
"""The task outcomes (testbed.analysis.tau2.compare), after the episodes and errors."""
USER_TOOL_COLUMNS: list[Column] = [
    ("user tool calls/ep.", lambda r: _num(r.user_tool_calls_per_episode, "{:.2f}")),
    ("user tool errors/ep.", lambda r: _num(r.user_tool_errors_per_episode, "{:.2f}")),
]
"""The simulated user's tool use, shown when some framework's user called a tool (telecom)."""
FAULT_COLUMNS: list[Column] = [
    ("user fault (95% CI)", lambda r: _rate(r, "fault_any", "fault_any_lo", "fault_any_hi")),
    ("failed with user fault (95% CI)", lambda r: _rate(r, "failed_with_fault", "failed_with_fault_lo", "failed_with_fault_hi")),
]
"""Whose fault a failure may have been: the share of episodes where the simulated user erred, and of failed ones."""
GAP_COLUMNS: list[Column] = [
    ("scripted-user reward", lambda r: "" if _absent(r.get("gap_tasks")) else _num(r.scripted_reward, "{:.2f}")),
    ("simulator gap (95% CI)", lambda r: _simulator_gap(r)),
]
"""A native-loop row's reward lost to the simulated user: the same assistant with the scripted user on the same
tasks (`compare --simulator-gap`; testbed.analysis.tau2.simulator_gap)."""
PAIRED_COLUMN: Column = ("Δ reward vs native (95% CI)", lambda r: _reward_change(r))
"""The paired reward difference with native, last."""


def compare_columns(frame: pd.DataFrame) -> tuple[list[Column], list[Column]]:
    """The τ² columns of a comparison frame: the outcomes (with the user's tool use when some user called a tool, the
    user's faults and the simulator gap when the frame has them) after the errors, and the paired reward last when
    something was paired. Neither for a frame without rewards."""
    if "reward" not in frame.columns:
        return [], []
    middle = OUTCOME_COLUMNS + (USER_TOOL_COLUMNS if (frame.user_tool_calls_per_episode.fillna(0) > 0).any() else [])
    middle += FAULT_COLUMNS if "fault_any" in frame.columns else []
    middle += GAP_COLUMNS if "simulator_gap" in frame.columns else []
    return middle, [PAIRED_COLUMN] if "reward_pairs" in frame.columns else []
