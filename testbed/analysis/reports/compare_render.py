"""The framework comparison as a rich table, Markdown, CSV or JSON (testbed compare).

Markdown and CSV are `neutralised` here (the tables are printed by a console that neutralises them,
JSON escapes every character outside ASCII), so no text a framework sent drives the terminal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pandas as pd

from testbed.analysis.reports.compare import label_mix_text
from testbed.specs.registries import kind_views
from testbed.fitted_table import FittedTable
from testbed.terminal_text import neutralised


def _absent(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _rate(r: pd.Series, key: str, lo: str, hi: str) -> str:
    value = r.get(key)
    if _absent(value):
        return "n/a"
    return f"{value:.1%} ({r[lo]:.0%}–{r[hi]:.0%})"


def _num(value, fmt: str = "{:.1f}") -> str:
    return "n/a" if _absent(value) else fmt.format(value)


def _signed(value) -> str:
    return "n/a" if _absent(value) else f"{value:+.1%}"


COLUMNS: list[tuple[str, Callable[[pd.Series], str]]] = [
    ("framework", lambda r: r.framework),
    ("episodes", lambda r: str(r.episodes)),
    ("errors", lambda r: str(r.errors)),
    ("user turns (scored)", lambda r: f"{r.user_turns} ({r.scored_turns})"),
    ("follow-up (95% CI)", lambda r: _rate(r, "followup_rate", "followup_lo", "followup_hi")),
    ("label mix (95% CI)", lambda r: label_mix_text(r.label_mix)),
    ("drift (95% CI)", lambda r: _rate(r, "drift_share", "drift_lo", "drift_hi")),
    ("median onset", lambda r: _num(r.median_onset, "{:g}")),
    ("terminations", lambda r: ", ".join(f"{k} {v}" for k, v in r.terminations.items()) or "n/a"),
    ("prompt tok/turn", lambda r: _num(r.prompt_tokens_per_turn)),
    ("completion tok/turn", lambda r: _num(r.completion_tokens_per_turn)),
    ("wall s", lambda r: _num(r.wall_s)),
    ("client CPU ms/turn", lambda r: _num(r.client_cpu_ms_per_turn)),
    ("user turns ≠ native (95% CI)", lambda r: _rate(r, "turns_differ", "turns_differ_lo", "turns_differ_hi")),
    ("Δ follow-up vs native", lambda r: _signed(r.get("followup_change"))),
]

REQUEST_COLUMNS = [("framework", "framework"), ("messages", "messages"), ("roles as sent", "roles"),
                   ("user's own turns as", "own_turns_as"), ("task text", "task_at"), ("system prompt", "system_prompt"),
                   ("sampling sent", "sampling")]


def columns_for(frame: pd.DataFrame) -> list[tuple[str, Callable[[pd.Series], str]]]:
    """The columns a comparison shows: COLUMNS, with the columns of the runs' kind (`frame.attrs["kind"]`, its views'
    `compare_columns`: τ²'s outcomes, faults and paired reward) after the errors and at the end."""
    views = kind_views(frame.attrs.get("kind"))
    middle, last = views.compare_columns(frame) if views.compare_columns is not None else ([], [])
    if not middle and not last:
        return COLUMNS
    return COLUMNS[:3] + middle + COLUMNS[3:] + last


def _rows(frame: pd.DataFrame) -> list[list[str]]:
    columns = columns_for(frame)
    return [[show(r) for _, show in columns] for _, r in frame.iterrows()]


def comparison_tables(frame: pd.DataFrame, requests: list[dict], episode: str | None, title: str) -> list[FittedTable]:
    """The comparison, and how each framework's simulated user saw the same turn, as tables fitted to the terminal
    (a card per framework where a table does not fit)."""
    table = FittedTable((name for name, _ in columns_for(frame)), _rows(frame), title=title)
    tables = [table]
    if requests:
        tables.append(FittedTable((name for name, _ in REQUEST_COLUMNS), ([str(r[key]) for _, key in REQUEST_COLUMNS] for r in requests),
                                  title=f"the simulated user's second request in episode {episode}, as each framework sent it (testbed wire)"))
    return tables


def comparison_text(frame: pd.DataFrame, requests: list[dict], episode: str | None, fmt: str,
                    realism: dict[str, dict] | None = None) -> str:
    """The comparison as Markdown (with the request shapes), CSV (the numbers) or JSON (everything), safe to print.

    JSON is one object: `frameworks` (a record per framework, every column of the comparison), `requests` (the
    `episode` and each framework's request `shapes`) and, when `realism` is given, `realism`: each framework's realism
    table (`testbed.analysis.realism.render.realism_records`) for the frameworks whose runs hold real users' turns."""
    if fmt == "json":
        shown = {"frameworks": json.loads(frame.to_json(orient="records")), "requests": {"episode": episode, "shapes": requests}}
        if realism is not None:
            shown["realism"] = realism
        return json.dumps(shown, indent=2)
    if fmt == "csv":
        flat = frame.assign(label_mix=[json.dumps(m) for m in frame.label_mix], terminations=[json.dumps(t) for t in frame.terminations])
        return neutralised(flat.to_csv(index=False).rstrip("\n"))
    if fmt != "markdown":
        raise ValueError(f"unknown format {fmt!r}; use table, markdown, csv or json")
    columns = columns_for(frame)
    lines = ["| " + " | ".join(n for n, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _rows(frame)]
    if requests:
        lines += ["", f"The simulated user's second request in episode {episode}:", "",
                  "| " + " | ".join(n for n, _ in REQUEST_COLUMNS) + " |", "|" + "---|" * len(REQUEST_COLUMNS)]
        lines += ["| " + " | ".join(str(r[k]).replace("|", "\\|") for _, k in REQUEST_COLUMNS) + " |" for r in requests]
    return neutralised("\n".join(lines))
