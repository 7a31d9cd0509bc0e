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

TAU2_COLUMNS: list[tuple[str, Callable[[pd.Series], str]]] = [
    ("errored (95% CI)", lambda r: _rate(r, "error_share", "error_lo", "error_hi")),
    ("reward (95% CI)", lambda r: _rate(r, "reward", "reward_lo", "reward_hi")),
    ("scored", lambda r: str(r.scored)),
    ("pass^k (k=1,2,…)", lambda r: _pass_hat_text(r)),
    ("tool calls/ep.", lambda r: _num(r.tool_calls_per_episode, "{:.2f}")),
    ("tool errors/ep.", lambda r: _num(r.tool_errors_per_episode, "{:.2f}")),
]
"""The τ² outcomes (testbed.analysis.tau2.compare), after the episodes and errors of a τ² comparison."""
TAU2_USER_TOOL_COLUMNS: list[tuple[str, Callable[[pd.Series], str]]] = [
    ("user tool calls/ep.", lambda r: _num(r.user_tool_calls_per_episode, "{:.2f}")),
    ("user tool errors/ep.", lambda r: _num(r.user_tool_errors_per_episode, "{:.2f}")),
]
"""The simulated user's tool use, shown when some framework's user called a tool (τ²'s telecom)."""
TAU2_FAULT_COLUMNS: list[tuple[str, Callable[[pd.Series], str]]] = [
    ("user fault (95% CI)", lambda r: _rate(r, "fault_any", "fault_any_lo", "fault_any_hi")),
    ("failed with user fault (95% CI)", lambda r: _rate(r, "failed_with_fault", "failed_with_fault_lo", "failed_with_fault_hi")),
]
"""Whose fault a failure may have been: the share of episodes where the simulated user erred, and of failed ones."""
TAU2_GAP_COLUMNS: list[tuple[str, Callable[[pd.Series], str]]] = [
    ("scripted-user reward", lambda r: "" if _absent(r.get("gap_tasks")) else _num(r.scripted_reward, "{:.2f}")),
    ("simulator gap (95% CI)", lambda r: _simulator_gap(r)),
]
"""A native-loop row's reward lost to the simulated user: the same assistant with the scripted τ² user on the same
tasks (`compare --simulator-gap`; testbed.analysis.tau2.simulator_gap)."""
TAU2_PAIRED_COLUMN = ("Δ reward vs native (95% CI)", lambda r: _reward_change(r))
"""The paired reward difference with native, last in a τ² comparison."""

REQUEST_COLUMNS = [("framework", "framework"), ("messages", "messages"), ("roles as sent", "roles"),
                   ("user's own turns as", "own_turns_as"), ("task text", "task_at"), ("system prompt", "system_prompt"),
                   ("sampling sent", "sampling")]


def columns_for(frame: pd.DataFrame) -> list[tuple[str, Callable[[pd.Series], str]]]:
    """The columns a comparison shows: COLUMNS, and for τ² runs (a `reward` column) the τ² outcomes after the
    errors (the user's tool use when some user called a tool, the user's faults) and the paired reward last, when something was paired."""
    if "reward" not in frame.columns:
        return COLUMNS
    tau2 = TAU2_COLUMNS + (TAU2_USER_TOOL_COLUMNS if (frame.user_tool_calls_per_episode.fillna(0) > 0).any() else [])
    tau2 += TAU2_FAULT_COLUMNS if "fault_any" in frame.columns else []
    tau2 += TAU2_GAP_COLUMNS if "simulator_gap" in frame.columns else []
    paired = [TAU2_PAIRED_COLUMN] if "reward_pairs" in frame.columns else []
    return COLUMNS[:3] + tau2 + COLUMNS[3:] + paired


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


def comparison_text(frame: pd.DataFrame, requests: list[dict], episode: str | None, fmt: str) -> str:
    """The comparison as Markdown (with the request shapes), CSV (the numbers) or JSON (everything), safe to print."""
    if fmt == "json":
        return json.dumps({"frameworks": json.loads(frame.to_json(orient="records")), "requests": {"episode": episode, "shapes": requests}},
                          indent=2)
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
