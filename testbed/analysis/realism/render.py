"""The realism table as the report prints it: each simulated user against the real users on the same contexts.

One row per simulated condition (user model × mode × temperature), then the real users' own row:
the discriminator's AUC (0.5 = indistinguishable from real users) with its permutation p-value, the
label-mix JSD (0 = the same mix), follow-up rates side by side (and corrected for the judge's measured
errors, when the report was given them), closeness to the real turn, and the shares a reader checks by eye.
"""

from __future__ import annotations

import json
import math

import pandas as pd
from testbed.analysis.realism.runs import RunRealism
from testbed.fitted_table import FittedTable
from testbed.terminal_text import neutralised

HEADER = ["user", "mode", "T", "contexts", "AUC real vs sim (95% CI), p", "label JSD (95% CI)", "follow-up sim", "follow-up real",
          "cosine to real", "length ratio", "words sim/real", "questions sim/real", "thanks sim/real", "gives it away"]
"""The realism table's columns as printed without corrected follow-up rates."""
CORRECTED_HEADER = ["follow-up sim corrected", "follow-up real corrected"]
"""The columns printed after "follow-up real" when the table holds follow-up rates corrected for the judge's errors."""
_CORRECTED_AT = HEADER.index("follow-up real") + 1
KEY_COLUMNS = 3
"""The leading columns that name a row (user, mode, T): a card's title where the table is folded."""


def _ci(value: float, lo: float, hi: float, fmt: str = "{:.2f}") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{fmt.format(value)} ({fmt.format(lo)}–{fmt.format(hi)})"


def _share(value: float) -> str:
    return "n/a" if value is None or value != value else f"{value:.0%}"


def _auc(value: float, lo: float, hi: float, p: float) -> str:
    shown = _ci(value, lo, hi)
    if shown == "n/a" or p is None or p != p:
        return shown
    return f"{shown}, p {p:.3f}" if p < 0.01 else f"{shown}, p {p:.2f}"


def _pair(a: float, b: float, fmt) -> str:
    return f"{fmt(a)} / {fmt(b)}"


def _words(value: float) -> str:
    return "n/a" if value != value else f"{value:.0f}"


def corrected(realism: RunRealism) -> bool:
    """Whether the table holds follow-up rates corrected for the judge's measured errors."""
    return "corrected_with" in realism.table.columns


def header(realism: RunRealism) -> list[str]:
    """The printed columns: `HEADER`, with `CORRECTED_HEADER` after the raw follow-up rates when the table holds them."""
    return HEADER[:_CORRECTED_AT] + CORRECTED_HEADER + HEADER[_CORRECTED_AT:] if corrected(realism) else list(HEADER)


def realism_rows(realism: RunRealism) -> list[list[str]]:
    """The printed rows, in `header`'s columns: one per simulated condition, then the real users' row."""
    rows = []
    with_corrected = corrected(realism)
    for r in realism.table.itertuples():
        row = [r.user_model, r.user_mode, f"{r.temperature:g}", str(r.contexts), _auc(r.auc, r.auc_lo, r.auc_hi, r.auc_p),
               _ci(r.jsd, r.jsd_lo, r.jsd_hi), _ci(r.followup_sim, r.followup_sim_lo, r.followup_sim_hi, "{:.0%}"),
               _ci(r.followup_real, r.followup_real_lo, r.followup_real_hi, "{:.0%}"), _ci(r.cosine, r.cosine_lo, r.cosine_hi),
               _ci(r.length_ratio, r.length_ratio_lo, r.length_ratio_hi), _pair(r.words_sim, r.words_real, _words),
               _pair(r.question_sim, r.question_real, _share), _pair(r.thanks_sim, r.thanks_real, _share), r.giveaways or "n/a"]
        if with_corrected:
            row[_CORRECTED_AT:_CORRECTED_AT] = [
                _ci(r.followup_sim_corrected, r.followup_sim_corrected_lo, r.followup_sim_corrected_hi, "{:.0%}"),
                _ci(r.followup_real_corrected, r.followup_real_corrected_lo, r.followup_real_corrected_hi, "{:.0%}")]
        rows.append(row)
    if not realism.baseline.empty:
        b = realism.baseline.iloc[0]
        row = ["real users", "human", "", str(int(b.turns)), "0.5 by definition", "0 by definition", "",
               _ci(b.followup, b.followup_lo, b.followup_hi, "{:.0%}"), "", "", _words(b.words), _share(b.question),
               _share(b.thanks), baseline_mix(b)]
        if with_corrected:
            real = (_ci(b.followup_corrected, b.followup_corrected_lo, b.followup_corrected_hi, "{:.0%}")
                    if "followup_corrected" in b else "n/a")
            row[_CORRECTED_AT:_CORRECTED_AT] = ["", real]
        rows.append(row)
    return rows


def baseline_mix(row: pd.Series) -> str:
    """How real users go on: follow-up, restated question, new question, thanks, as shares."""
    parts = [("follow up", "share_genuine_followup"), ("restate", "share_restate_question"), ("ask something new", "share_new_question"),
             ("filler", "share_short_filler")]
    return ", ".join(f"{name} {row[c]:.0%}" for name, c in parts if c in row and row[c] == row[c])


def title(realism: RunRealism) -> str:
    """What the table compares, and a warning when the real turns answered another message."""
    base = "realism: each simulated user against the real users' next turns on the same contexts"
    if corrected(realism) and len(realism.table):
        base += f"; follow-up corrected for the judge's errors ({realism.table.corrected_with.iloc[0]})"
    return base + (" (weak reference: the real turn answered another message than the simulated users saw)" if realism.weak_reference else "")


def as_rich(realism: RunRealism) -> FittedTable:
    """The realism table for a terminal (its console neutralises the text), a card per simulated user where the
    terminal is too narrow for the table."""
    return FittedTable(header(realism), realism_rows(realism), title=title(realism), key=KEY_COLUMNS)


def realism_records(realism: RunRealism) -> dict:
    """The realism table as JSON-ready data: its `title`, `weak_reference`, a record per simulated condition (`rows`,
    every measured column with its interval) and the real users' own record (`real_users`, None without one)."""
    baseline = None if realism.baseline.empty else json.loads(realism.baseline.iloc[:1].to_json(orient="records"))[0]
    return {"title": title(realism), "weak_reference": realism.weak_reference,
            "rows": json.loads(realism.table.to_json(orient="records")), "real_users": baseline}


def as_markdown(realism: RunRealism) -> str:
    """The realism table in Markdown, text neutralised, under a heading with its title."""
    columns = header(realism)
    lines = [f"### {title(realism)}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(neutralised(c).replace("|", "\\|") for c in row) + " |" for row in realism_rows(realism)]
    return "\n".join(lines)
