"""Render a report frame as a rich table, Markdown, CSV or JSON."""

from __future__ import annotations

import math

import pandas as pd
from rich.table import Table

FORMATS = ("table", "markdown", "csv", "json")


def _rate(value: float, lo: float, hi: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.1%} ({lo:.0%}–{hi:.0%})"


def _num(value: float, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt.format(value)


def display_rows(report: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Human-readable columns: rates with their 95 % Wilson intervals, n/a where nothing was scored."""
    header = ["assistant", "user", "dataset", "mode", "T", "perturbation", "episodes", "errors",
              "accuracy (95% CI)", "scored", "user words", "user = question (95% CI)"]
    rows = []
    for r in report.itertuples(index=False):
        rows.append([
            r.assistant_model, r.user_model, r.dataset, r.user_mode, f"{r.temperature:g}", r.perturbation,
            str(r.episodes), str(r.errors), _rate(r.accuracy, r.accuracy_lo, r.accuracy_hi), str(r.scored),
            _num(r.user_turn_words), _rate(r.identical_to_question, r.identical_lo, r.identical_hi),
        ])
    return header, rows


CONDITION_COLUMNS = ("assistant", "user", "dataset", "mode", "T", "perturbation")


def split_constant(header: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]], dict[str, str]]:
    """Move condition columns that hold one value in every row out of the table, into a caption."""
    constant = {h: rows[0][i] for i, h in enumerate(header) if h in CONDITION_COLUMNS and rows and len({r[i] for r in rows}) == 1}
    keep = [i for i, h in enumerate(header) if h not in constant]
    return [header[i] for i in keep], [[r[i] for i in keep] for r in rows], constant


def as_rich_table(report: pd.DataFrame, title: str) -> Table:
    """A rich table for the terminal; conditions shared by all rows go into the caption."""
    header, rows, constant = split_constant(*display_rows(report))
    caption = "  ".join(f"{k}: {v}" for k, v in constant.items()) + "  (rates exclude errored episodes)"
    table = Table(title=title, caption=caption)
    for h in header:
        table.add_column(h, justify="right" if h in ("episodes", "errors", "scored", "user words", "T", "unscored") else "left",
                         no_wrap=h in CONDITION_COLUMNS)
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
        return report.to_csv(index=False).rstrip("\n")
    if fmt == "json":
        return report.to_json(orient="records", indent=2)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
