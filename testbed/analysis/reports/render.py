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
from testbed.specs.registries import KINDS, kind_views
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


def _conditions(r: pd.Series) -> list[str]:
    return [r.assistant_model, r.user_model, r.dataset, r.user_mode, f"{r.temperature:g}", r.get("perturbation", "none")]


LEAD_COLUMNS: list[tuple[str, str, Callable[[pd.Series], str]]] = [
    ("episodes", "episodes", lambda r: str(r.episodes)),
    ("errors", "errors", lambda r: str(r.errors)),
    ("accuracy (95% CI)", "accuracy", lambda r: _rate(r.accuracy, r.accuracy_lo, r.accuracy_hi)),
    ("scored", "scored", lambda r: str(r.scored)),
    ("user words", "user_turn_words", lambda r: _num(r.user_turn_words)),
    ("empty turns", "empty_user_turns", lambda r: str(r.empty_user_turns)),
    ("user = question (95% CI)", "identical_to_question", lambda r: _rate(r.identical_to_question, r.identical_lo, r.identical_hi)),
    ("user turns/ep.", "user_turns_per_episode", lambda r: _num(r.user_turns_per_episode)),
    ("ended by", "user_turns_per_episode", lambda r: top_shares(r, "end_")),
]
"""The episode columns every report has: header, the report column that must exist for it (a name ending in `_`: some
column with that prefix), and how to show a row."""
JUDGE_COLUMNS: list[tuple[str, str, Callable[[pd.Series], str]]] = [
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
"""The judge's label and drift columns, and information gathering's, after the kinds' own."""


def display_columns() -> list[tuple[str, str, Callable[[pd.Series], str]]]:
    """Every display column, in order: the episode columns, each registered kind's own (its views' `report_columns`:
    τ²'s reward, faults and tool use), then the judge's; a report shows those whose column it has."""
    kinds = [c for kind in KINDS.names() for c in kind_views(kind).report_columns]
    return [*LEAD_COLUMNS, *kinds, *JUDGE_COLUMNS]


ONLY_WHEN_NONZERO = ("empty_user_turns",)
"""Columns shown only when some row has a non-zero value (they stay in CSV and JSON either way)."""


def _has(report: pd.DataFrame, column: str) -> bool:
    return any(c.startswith(column) for c in report.columns) if column.endswith("_") else column in report.columns


def display_rows(report: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The human-readable columns this report has: rates with 95 % Wilson intervals (a τ² reward that is not all
    0 or 1: a bootstrap one), n/a where nothing was scored."""
    shown = [(h, f) for h, col, f in display_columns() if _has(report, col) and not (col in ONLY_WHEN_NONZERO and not report[col].any())]
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


LEAD_GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("episodes", ("episodes", "errors", "accuracy (95% CI)", "scored", "user words", "empty turns", "user = question (95% CI)",
                  "user turns/ep.", "ended by")),
]
"""The episode columns' table, first."""
JUDGE_GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("judge labels", ("follow-up (95% CI)", "corrected (95% CI)", "reviewed", "unscored", "top labels")),
    ("role drift", ("drift (95% CI)", "median onset", "onsets k:n", "in role after k=1,2,…")),
    ("information gathering", ("facts recovered (95% CI)", "in final output", "questions/fact", "premature (95% CI)",
                               "leak rate (95% CI)")),
]
"""The judge's and information gathering's tables, after the kinds' own."""


def table_groups() -> list[tuple[str, tuple[str, ...]]]:
    """Column groups, in order: each becomes its own table, so a terminal of ordinary width can show them; each
    registered kind's own (its views' `report_groups`) between the episodes and the judge's."""
    return [*LEAD_GROUPS, *(g for kind in KINDS.names() for g in kind_views(kind).report_groups), *JUDGE_GROUPS]


RIGHT = frozenset({"episodes", "errors", "scored", "user words", "empty turns", "T", "unscored", "user turns/ep.",
                   "median onset", "questions/fact"})
"""Headers whose cells are right-aligned (counts and numbers); each kind adds its own (its views' `report_right`)."""


def _right(header: str) -> bool:
    return header in RIGHT or any(header in kind_views(kind).report_right for kind in KINDS.names())


def as_rich_tables(report: pd.DataFrame, title: str) -> list[FittedTable]:
    """Tables for the terminal, one per column group present, each fitted to the width it is printed at (a card per
    condition where the table does not fit); conditions shared by all rows go into the first table's caption, the
    varying ones lead every table (and title every card)."""
    header, rows, constant = split_constant(*display_rows(report))
    conditions = [i for i, h in enumerate(header) if h in CONDITION_COLUMNS]
    tables = []
    for name, members in table_groups():
        picked = [i for i, h in enumerate(header) if h in members]
        if not picked:
            continue
        columns = [FitColumn(header[i], justify="right" if _right(header[i]) else "left", no_wrap=header[i] in CONDITION_COLUMNS)
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
