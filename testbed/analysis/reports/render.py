"""Render a report frame as a rich table, Markdown, CSV or JSON.

Model names, datasets and labels come from outside the testbed: the rich tables are printed by a
console that neutralises them (`testbed.cli.shell`); Markdown and CSV are `neutralised` here, and JSON
escapes every character outside ASCII.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pandas as pd
from testbed.fitted_table import FitColumn, FittedTable
from testbed.terminal_text import neutralised

FORMATS = ("table", "markdown", "csv", "json")


def _rate(value: float, lo: float, hi: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.1%} ({lo:.0%}–{hi:.0%})"


def _num(value: float, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt.format(value)


def top_shares(row: pd.Series, prefix: str, k: int = 3) -> str:
    """The k largest `<prefix><name>` shares of a report row, e.g. `echo_assistant 45%`."""
    shares = {c.removeprefix(prefix): row[c] for c in row.index if c.startswith(prefix) and row[c] == row[c] and row[c] > 0}
    best = sorted(shares.items(), key=lambda kv: -kv[1])[:k]
    return ", ".join(f"{name} {share:.0%}" for name, share in best) or "n/a"


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


def _conditions(r: pd.Series) -> list[str]:
    return [r.assistant_model, r.user_model, r.dataset, r.user_mode, f"{r.temperature:g}", r.get("perturbation", "none")]


def _rated(column: str) -> Callable[[pd.Series], str]:
    return lambda r: _rate(r[column], r[f"{column}_lo"], r[f"{column}_hi"])


USER_FAULT_COLUMNS = [("premature stop (95% CI)", "fault_premature_stop"), ("revealed early (95% CI)", "fault_revealed_early"),
                      ("invented fact (95% CI)", "fault_invented_fact"),
                      ("ungrounded device claim (95% CI)", "fault_ungrounded_device_claim"),
                      ("user role drift (95% CI)", "fault_role_drift"), ("any user fault (95% CI)", "fault_any"),
                      ("failed with user fault (95% CI)", "failed_with_fault")]
"""The τ² report's simulated-user fault rates (testbed.analysis.tau2.faults): header and column, each with its interval."""

FAULT_REVIEW_COLUMNS: list[tuple[str, str, Callable[[pd.Series], str]]] = [
    ("hindering faults (95% CI)", "fault_hindered", _rated("fault_hindered")),
    ("faults reviewed", "fault_reviewed", lambda r: str(r.fault_reviewed)),
    ("reviews unscored", "fault_review_unscored", lambda r: str(r.fault_review_unscored)),
    ("failed with hindering fault (95% CI)", "failed_hindered", _rated("failed_hindered")),
]
"""The reviewed severity of those faults (`testbed review-faults`), shown only when a reviewer reviewed the run."""

COLUMNS: list[tuple[str, str, Callable[[pd.Series], str]]] = [
    ("episodes", "episodes", lambda r: str(r.episodes)),
    ("errors", "errors", lambda r: str(r.errors)),
    ("accuracy (95% CI)", "accuracy", lambda r: _rate(r.accuracy, r.accuracy_lo, r.accuracy_hi)),
    ("scored", "scored", lambda r: str(r.scored)),
    ("user words", "user_turn_words", lambda r: _num(r.user_turn_words)),
    ("empty turns", "empty_user_turns", lambda r: str(r.empty_user_turns)),
    ("user = question (95% CI)", "identical_to_question", lambda r: _rate(r.identical_to_question, r.identical_lo, r.identical_hi)),
    ("user turns/ep.", "user_turns_per_episode", lambda r: _num(r.user_turns_per_episode)),
    ("ended by", "user_turns_per_episode", lambda r: top_shares(r, "end_")),
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
    ("follow-up (95% CI)", "followup_rate", lambda r: _rate(r.followup_rate, r.followup_lo, r.followup_hi)),
    ("corrected (95% CI)", "followup_corrected", lambda r: _rate(r.followup_corrected, r.corrected_lo, r.corrected_hi)),
    ("reviewed", "reviewed_share", lambda r: _num(r.reviewed_share, "{:.0%}")),
    ("unscored", "followup_rate", lambda r: str(r.unscored)),
    ("top labels", "followup_rate", lambda r: top_shares(r, "share_")),
    ("drift (95% CI)", "drift_share", lambda r: _rate(r.drift_share, r.drift_lo, r.drift_hi)),
    ("median onset", "drift_share", lambda r: _num(r.median_onset, "{:g}")),
    ("onsets k:n", "onset_distribution", lambda r: r.onset_distribution or "none"),
    ("in role after k=1,2,…", "in_role_after_k", lambda r: r.in_role_after_k or "n/a"),
    ("facts recovered (95% CI)", "recovered", lambda r: _rate(r.recovered, r.recovered_lo, r.recovered_hi)),
    ("in final output", "in_final_output", lambda r: _rate(r.in_final_output, r.in_final_output_lo, r.in_final_output_hi)),
    ("questions/fact", "questions_per_recovered_fact", lambda r: _num(r.questions_per_recovered_fact)),
    ("premature (95% CI)", "premature", lambda r: _rate(r.premature, r.premature_lo, r.premature_hi)),
    ("leak rate (95% CI)", "leak_rate", lambda r: _rate(r.leak_rate, r.leak_rate_lo, r.leak_rate_hi)),
]
"""Display columns: header, the report column that must exist for it (a name ending in `_`: some column with
that prefix), and how to show a row."""


ONLY_WHEN_NONZERO = ("empty_user_turns",)
"""Columns shown only when some row has a non-zero value (they stay in CSV and JSON either way)."""


def _has(report: pd.DataFrame, column: str) -> bool:
    return any(c.startswith(column) for c in report.columns) if column.endswith("_") else column in report.columns


def display_rows(report: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The human-readable columns this report has: rates with 95 % Wilson intervals (a τ² reward that is not all
    0 or 1: a bootstrap one), n/a where nothing was scored."""
    shown = [(h, f) for h, col, f in COLUMNS if _has(report, col) and not (col in ONLY_WHEN_NONZERO and not report[col].any())]
    header = ["assistant", "user", "dataset", "mode", "T", "perturbation", *(h for h, _ in shown)]
    rows = [_conditions(r) + [f(r) for _, f in shown] for _, r in report.iterrows()]
    return header, rows


CONDITION_COLUMNS = ("assistant", "user", "model (both roles)", "dataset", "mode", "T", "perturbation")


SELF_PLAY = "model (both roles)"
"""The one column that stands for assistant and user when every row has the same model in both roles (a sweep with `user: self`)."""


def split_constant(header: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]], dict[str, str]]:
    """Move condition columns that hold one value in every row out of the table, into a caption; when every
    row's user model is its assistant model, the two columns become one."""
    a, u = header.index("assistant"), header.index("user")
    if rows and all(r[a] == r[u] for r in rows) and len({r[a] for r in rows}) > 1:
        header = [SELF_PLAY if h == "assistant" else h for i, h in enumerate(header) if i != u]
        rows = [[v for i, v in enumerate(r) if i != u] for r in rows]
    constant = {h: rows[0][i] for i, h in enumerate(header) if h in CONDITION_COLUMNS and rows and len({r[i] for r in rows}) == 1}
    keep = [i for i, h in enumerate(header) if h not in constant]
    return [header[i] for i in keep], [[r[i] for i in keep] for r in rows], constant


TABLE_GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("episodes", ("episodes", "errors", "accuracy (95% CI)", "scored", "user words", "empty turns", "user = question (95% CI)",
                  "user turns/ep.", "ended by")),
    ("τ² tasks", ("reward (95% CI)", "errored in reward", "tasks", "pass^k (k=1,2,…)", "reward parts")),
    ("simulator gap (model user − scripted user, paired by task)", ("scripted-user reward", "simulator gap (95% CI)",
                                                                    "gap tasks")),
    ("tool use", ("tool calls/ep.", "tool errors/ep.", "user tool calls/ep.", "user tool errors/ep.")),
    ("simulated-user faults", tuple(h for h, _ in USER_FAULT_COLUMNS)),
    ("seed reliability", ("pass^k, user's seed varied", "pass^k, assistant's seed varied", "trial variance, user varied",
                          "trial variance, assistant varied", "user's share of spread", "seed note")),
    ("fault severity (reviewed)", tuple(h for h, _, _ in FAULT_REVIEW_COLUMNS)),
    ("judge labels", ("follow-up (95% CI)", "corrected (95% CI)", "reviewed", "unscored", "top labels")),
    ("role drift", ("drift (95% CI)", "median onset", "onsets k:n", "in role after k=1,2,…")),
    ("information gathering", ("facts recovered (95% CI)", "in final output", "questions/fact", "premature (95% CI)",
                               "leak rate (95% CI)")),
]
"""Column groups: each becomes its own table, so a terminal of ordinary width can show them."""

RIGHT = ("episodes", "errors", "scored", "user words", "empty turns", "T", "unscored", "user turns/ep.", "median onset",
         "questions/fact", "tasks", "tool calls/ep.", "tool errors/ep.", "user tool calls/ep.", "user tool errors/ep.",
         "faults reviewed", "reviews unscored", "scripted-user reward", "gap tasks")


def as_rich_tables(report: pd.DataFrame, title: str) -> list[FittedTable]:
    """Tables for the terminal, one per column group present, each fitted to the width it is printed at (a card per
    condition where the table does not fit); conditions shared by all rows go into the first table's caption, the
    varying ones lead every table (and title every card)."""
    header, rows, constant = split_constant(*display_rows(report))
    conditions = [i for i, h in enumerate(header) if h in CONDITION_COLUMNS]
    tables = []
    for name, members in TABLE_GROUPS:
        picked = [i for i, h in enumerate(header) if h in members]
        if not picked:
            continue
        columns = [FitColumn(header[i], justify="right" if header[i] in RIGHT else "left", no_wrap=header[i] in CONDITION_COLUMNS)
                   for i in conditions + picked]
        tables.append(FittedTable(columns, ([row[i] for i in conditions + picked] for row in rows),
                                  title=f"{title}: {name}" if not tables else name, key=len(conditions)))
    if tables:
        tables[0].caption = "  ".join(f"{k}: {v}" for k, v in constant.items()) + "  (rates exclude errored episodes)"
    return tables


def as_markdown(report: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table, ready for a paper draft or an issue."""
    header, rows = display_rows(report)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _with_json_cells(report: pd.DataFrame) -> pd.DataFrame:
    """The report with each cell that holds a dict (a condition's `error_reasons`) written as JSON, for CSV."""
    nested = [c for c in report.columns if report[c].dtype == object and report[c].map(lambda v: isinstance(v, dict)).any()]
    return report.assign(**{c: [json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else v for v in report[c]] for c in nested})


def render(report: pd.DataFrame, fmt: str) -> str:
    """Text of the report in a machine or Markdown format (the table format is printed by rich), safe to print."""
    if fmt == "markdown":
        return neutralised(as_markdown(report))
    if fmt == "csv":
        return neutralised(_with_json_cells(report).to_csv(index=False).rstrip("\n"))
    if fmt == "json":
        return report.to_json(orient="records", indent=2)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
