"""Render a report frame as a rich table, Markdown, CSV or JSON."""

from __future__ import annotations

import math

import pandas as pd
from rich.table import Table

FORMATS = ("table", "markdown", "csv", "json")


def _rate(value: float, lo: float, hi: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.1%} [{lo:.0%}, {hi:.0%}]"


def _num(value: float, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt.format(value)


def display_rows(report: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Human-readable columns: rates with their 95 % Wilson intervals, n/a where nothing was scored."""
    header = ["assistant", "user", "dataset", "mode", "T", "perturbation", "episodes", "errors",
              "accuracy [95% CI]", "scored", "user words", "user = question [95% CI]"]
    rows = []
    for r in report.itertuples(index=False):
        rows.append([
            r.assistant_model, r.user_model, r.dataset, r.user_mode, f"{r.temperature:g}", r.perturbation,
            str(r.episodes), str(r.errors), _rate(r.accuracy, r.accuracy_lo, r.accuracy_hi), str(r.scored),
            _num(r.user_turn_words), _rate(r.identical_to_question, r.identical_lo, r.identical_hi),
        ])
    return header, rows


def as_rich_table(report: pd.DataFrame, title: str) -> Table:
    """A rich table for the terminal."""
    header, rows = display_rows(report)
    table = Table(title=title)
    for h in header:
        table.add_column(h, justify="right" if h in ("episodes", "errors", "scored", "user words", "T") else "left")
    for row in rows:
        table.add_row(*row)
    return table


def as_markdown(report: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table, ready for a paper draft or an issue."""
    header, rows = display_rows(report)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render(report: pd.DataFrame, fmt: str) -> str:
    """Text of the report in a machine or Markdown format (the table format is printed by rich)."""
    if fmt == "markdown":
        return as_markdown(report)
    if fmt == "csv":
        return report.to_csv(index=False)
    if fmt == "json":
        return report.to_json(orient="records", indent=2)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
