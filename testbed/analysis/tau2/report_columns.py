"""How `testbed report` shows the τ² report's own columns (testbed.analysis.tau2.report): headers, formatters, groups.

The report's renderer (testbed.analysis.reports.render) shows these after the episode columns every report has, each
only when the report has its column, and groups them into tables of their own; it knows nothing of τ² itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from testbed.analysis.reports.render import _num, _rate
from testbed.analysis.tau2.user_review import RULE_CHECKED_TAGS

Column = tuple[str, str, Callable[[pd.Series], str]]


def _rated(column: str) -> Callable[[pd.Series], str]:
    return lambda r: _rate(r[column], r[f"{column}_lo"], r[f"{column}_hi"])


def _series(row: pd.Series, prefix: str) -> str:
    """The `<prefix>1`, `<prefix>2`, … values of a report row in order, as far as they go (pass^k by k)."""
    values = sorted((int(c.removeprefix(prefix)), row[c]) for c in row.index if c.startswith(prefix) and row[c] == row[c])
    return " ".join(f"{v:.2f}" for _, v in values) or "n/a"


def _parts(row: pd.Series, prefix: str) -> str:
    """Every `<prefix><name>` mean of a report row, zeros included, e.g. `DB 0.50, COMMUNICATE 1.00`."""
    parts = [f"{c.removeprefix(prefix)} {row[c]:.2f}" for c in row.index if c.startswith(prefix) and row[c] == row[c]]
    return ", ".join(parts) or "n/a"


def _gap(row: pd.Series) -> str:
    """A simulator gap as a signed reward difference with its interval, e.g. `-0.25 (-0.50 to 0.00)`; blank on the
    scripted user's own rows."""
    value = row.simulator_gap
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "" if pd.isna(row.get("gap_tasks")) else "n/a"
    lo, hi = row.simulator_gap_lo, row.simulator_gap_hi
    interval = "" if lo != lo or hi != hi else f" ({lo:+.2f} to {hi:+.2f})"
    return f"{value:+.2f}{interval}"


USER_FAULT_COLUMNS = [("premature stop (95% CI)", "fault_premature_stop"), ("revealed early (95% CI)", "fault_revealed_early"),
                      ("invented fact (95% CI)", "fault_invented_fact"),
                      ("ungrounded device claim (95% CI)", "fault_ungrounded_device_claim"),
                      ("user role drift (95% CI)", "fault_role_drift"), ("any user fault (95% CI)", "fault_any"),
                      ("failed with user fault (95% CI)", "failed_with_fault")]
"""The simulated-user fault rates (testbed.analysis.tau2.faults): header and column, each with its interval."""

def _agreement(row: pd.Series, tag: str) -> str:
    """Rules against reviewer on one tag, e.g. `κ 0.62, 95% agree (both 3, rules 1, reviewer 2, neither 34)`."""
    turns = row.get(f"agree_{tag}_turns")
    if turns is None or turns != turns:
        return "n/a"
    cells = ", ".join(f"{name} {int(row[f'agree_{tag}_{c}'])}" for name, c in
                      (("both", "both"), ("rules", "rules_only"), ("reviewer", "reviewer_only"), ("neither", "neither")))
    return f"κ {_num(row[f'agree_{tag}_kappa'], '{:.2f}')}, {_num(row[f'agree_{tag}_agreement'], '{:.0%}')} agree ({cells})"


def _headline(row: pd.Series, name: str) -> str:
    """A headline share raw with its interval, then corrected with the detector's measured error where it was measured,
    e.g. `40.0% (17%–69%) → 35.2% (8%–71%) corrected`, or `… uncorrected`; the detector named on its own line."""
    raw = _rate(row[name], row[f"{name}_lo"], row[f"{name}_hi"])
    fixed = row.get(f"{name}_corrected")
    tail = ("uncorrected" if fixed is None or fixed != fixed else
            f"→ {_rate(fixed, row[f'{name}_corrected_lo'], row[f'{name}_corrected_hi'])} corrected")
    return f"{raw} {tail}, n = {int(row[f'{name}_n'])}\nby {row[f'{name}_detector']}"


HEADLINE_DISPLAY: list[Column] = [
    ("failed episodes the user hindered (critical_hindered)", "failed_hindered_review_n",
     lambda r: _headline(r, "failed_hindered_review")),
    ("successful episodes the user made too easy (critical_helped)", "success_helped_review_n",
     lambda r: _headline(r, "success_helped_review")),
    ("episodes with any rule fault", "rules_any_n", lambda r: _headline(r, "rules_any")),
]
"""The headline shares (testbed.analysis.tau2.headline), raw and corrected with each detector's measured error."""

FAULT_SOURCE_COLUMN: Column = ("user faults found by", "fault_source", lambda r: str(r.fault_source))
"""The rules (and judge) whose faults the simulated-user fault rates count."""

USER_REVIEW_DISPLAY: list[Column] = [
    ("episodes with user error (95% CI)", "review_error", _rated("review_error")),
    ("with critical_hindered (95% CI)", "review_hindered", _rated("review_hindered")),
    ("with critical_helped (95% CI)", "review_helped", _rated("review_helped")),
    ("episodes reviewed", "review_episodes", lambda r: str(r.review_episodes)),
    ("episode reviews unscored", "review_unscored", lambda r: str(r.review_unscored)),
    ("reviewed by", "review_source", lambda r: str(r.review_source)),
]
"""The whole-conversation reviewer's figures (testbed.analysis.tau2.user_review), shown only when one reviewed the run."""

AGREEMENT_DISPLAY: list[Column] = [(f"rules vs reviewer: {tag}", f"agree_{tag}_kappa", lambda r, tag=tag: _agreement(r, tag))
                                   for tag in (*RULE_CHECKED_TAGS, "any")]
"""Rules against the reviewer per user turn, per tag the rules flag and pooled."""

FAULT_REVIEW_COLUMNS: list[Column] = [
    ("hindering faults (95% CI)", "fault_hindered", _rated("fault_hindered")),
    ("faults reviewed", "fault_reviewed", lambda r: str(r.fault_reviewed)),
    ("reviews unscored", "fault_review_unscored", lambda r: str(r.fault_review_unscored)),
    ("failed with hindering fault (95% CI)", "failed_hindered", _rated("failed_hindered")),
]
"""The reviewed severity of those faults (`testbed review-faults`), shown only when a reviewer reviewed the run."""

REPORT_COLUMNS: list[Column] = [
    ("reward (95% CI)", "reward", lambda r: _rate(r.reward, r.reward_lo, r.reward_hi)),
    ("errored in reward", "reward_errored_as", lambda r: "as 0" if r.reward_errored_as == "zero" else "left out"),
    ("tasks", "tasks", lambda r: str(r.tasks)),
    ("pass^k (k=1,2,…)", "pass_hat_1", lambda r: _series(r, "pass_hat_")),
    ("reward parts", "breakdown_", lambda r: _parts(r, "breakdown_")),
    ("scripted-user reward", "scripted_reward", lambda r: "" if pd.isna(r.gap_tasks) else _num(r.scripted_reward, "{:.2f}")),
    ("simulator gap (95% CI)", "simulator_gap", lambda r: _gap(r)),
    ("gap tasks", "gap_tasks", lambda r: "" if pd.isna(r.gap_tasks) else str(int(r.gap_tasks))),
    ("tool calls/ep.", "tool_calls_per_episode", lambda r: _num(r.tool_calls_per_episode, "{:.2f}")),
    ("tool errors/ep.", "tool_errors_per_episode", lambda r: _num(r.tool_errors_per_episode, "{:.2f}")),
    ("user tool calls/ep.", "user_tool_calls_per_episode", lambda r: _num(r.user_tool_calls_per_episode, "{:.2f}")),
    ("user tool errors/ep.", "user_tool_errors_per_episode", lambda r: _num(r.user_tool_errors_per_episode, "{:.2f}")),
    *((h, c, _rated(c)) for h, c in USER_FAULT_COLUMNS),
    ("pass^k, user's seed varied", "vary_user_pass_hat_1", lambda r: _series(r, "vary_user_pass_hat_")),
    ("pass^k, assistant's seed varied", "vary_assistant_pass_hat_1", lambda r: _series(r, "vary_assistant_pass_hat_")),
    ("trial variance, user varied", "vary_user_trial_variance", lambda r: _num(r.vary_user_trial_variance, "{:.3f}")),
    ("trial variance, assistant varied", "vary_assistant_trial_variance", lambda r: _num(r.vary_assistant_trial_variance, "{:.3f}")),
    ("user's share of spread", "user_variance_share", lambda r: _num(r.user_variance_share, "{:.2f}")),
    ("seed note", "vary_note", lambda r: r.vary_note if isinstance(r.vary_note, str) else ""),
    *FAULT_REVIEW_COLUMNS,
    FAULT_SOURCE_COLUMN,
    *HEADLINE_DISPLAY,
    *USER_REVIEW_DISPLAY,
    *AGREEMENT_DISPLAY,
]
"""The τ² report's display columns: header, the report column that must exist for it (a name ending in `_`: some
column with that prefix), and how to show a row."""

REPORT_GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("τ² tasks", ("reward (95% CI)", "errored in reward", "tasks", "pass^k (k=1,2,…)", "reward parts")),
    ("simulator gap (model user − scripted user, paired by task)", ("scripted-user reward", "simulator gap (95% CI)",
                                                                    "gap tasks")),
    ("tool use", ("tool calls/ep.", "tool errors/ep.", "user tool calls/ep.", "user tool errors/ep.")),
    ("simulated-user faults", (*(h for h, _ in USER_FAULT_COLUMNS), FAULT_SOURCE_COLUMN[0])),
    ("seed reliability", ("pass^k, user's seed varied", "pass^k, assistant's seed varied", "trial variance, user varied",
                          "trial variance, assistant varied", "user's share of spread", "seed note")),
    ("fault severity (reviewed)", tuple(h for h, _, _ in FAULT_REVIEW_COLUMNS)),
    ("the simulator's share, corrected with its detector's measured error (judges/faults-gold)",
     tuple(h for h, _, _ in HEADLINE_DISPLAY)),
    ("simulated-user errors (whole-conversation review)", tuple(h for h, _, _ in USER_REVIEW_DISPLAY)),
    ("rules vs reviewer (per user turn, on episodes both checked)", tuple(h for h, _, _ in AGREEMENT_DISPLAY)),
]
"""The τ² columns' tables, in order, each shown when the report has one of its columns."""

REPORT_RIGHT = frozenset({"tasks", "tool calls/ep.", "tool errors/ep.", "user tool calls/ep.", "user tool errors/ep.",
                          "faults reviewed", "reviews unscored", "scripted-user reward", "gap tasks",
                          "episodes reviewed", "episode reviews unscored"})
"""The τ² headers whose cells are right-aligned (counts and per-episode numbers)."""
