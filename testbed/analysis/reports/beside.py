"""The tables a report prints beside its own, as columns of its rows, so `--format json` and `csv` carry them too.

The terminal shows the realism table (each simulated user against the real users), the perturbation
table (each perturbed answer against the unperturbed one) and the reasons episodes failed under the
report. Their rows name a condition the report has as well, so each is joined onto the report's rows
under a prefix: a JSON record or CSV row gains `realism_auc`, `realism_auc_lo`, …, `perturbed_changed`,
…, `error_reasons` and keeps every key it had. A row the table does not cover (an unperturbed
condition, a run without real users) has none of them.
"""

from __future__ import annotations

import pandas as pd

from testbed.analysis.realism.runs import RunRealism
from testbed.redaction import redact
from testbed.scenarios.human_reference import HUMAN_MODE
from testbed.store.records import CONDITIONS

REALISM_PREFIX = "realism_"
"""The realism table's columns on a report row: `realism_auc`, `realism_jsd`, `realism_giveaways`, …"""
PERTURBED_PREFIX = "perturbed_"
"""The perturbation table's columns on a perturbed condition's row: `perturbed_pairs`, `perturbed_changed`, …"""
REALISM_KEYS = ["user_model", "user_mode", "temperature"]
PERTURBATION_KEYS = ["perturbation", "user_mode", "temperature"]


def with_realism(report: pd.DataFrame, realism: RunRealism) -> pd.DataFrame:
    """The report with each simulated condition's realism figures on its row, the real users' own figures (as the
    table prints them: AUC 0.5 and JSD 0 by definition, their follow-up, words, questions, thanks and label mix) on
    the real users' row, and `realism_weak_reference` on every row; the report itself when the run has no real users."""
    if realism.empty:
        return report
    table = realism.table.rename(columns={c: REALISM_PREFIX + c for c in realism.table.columns if c not in REALISM_KEYS})
    joined = _left_join(report, table, REALISM_KEYS)
    if not realism.baseline.empty:
        human = (joined.user_mode == HUMAN_MODE).to_numpy()
        for column, value in _baseline_columns(realism.baseline.iloc[0]).items():
            if column not in joined:
                joined[column] = None
            joined[column] = joined[column].astype(object)
            joined.loc[human, column] = value
    joined[REALISM_PREFIX + "weak_reference"] = realism.weak_reference
    return joined


def _baseline_columns(row: pd.Series) -> dict[str, object]:
    """The real users' row of the realism table, under the realism table's column names."""
    shown = {"contexts": int(row.turns), "auc": 0.5, "jsd": 0.0, "followup_real": row.followup, "followup_real_lo": row.followup_lo,
             "followup_real_hi": row.followup_hi, "words_real": row.words, "question_real": row.question, "thanks_real": row.thanks}
    if "followup_corrected" in row.index:
        shown.update(followup_real_corrected=row.followup_corrected, followup_real_corrected_lo=row.followup_corrected_lo,
                     followup_real_corrected_hi=row.followup_corrected_hi, corrected_with=row.corrected_with)
    shown.update({c: row[c] for c in row.index if c.startswith("share_")})
    return {REALISM_PREFIX + c: v for c, v in shown.items()}


def with_perturbations(report: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """The report with each perturbed condition's paired effect (pairs, changed share and interval, follow-up rates
    without and with the perturbation, their change) on its row; the report itself when nothing was perturbed."""
    if effects.empty or "perturbation" not in report:
        return report
    table = effects.rename(columns={c: PERTURBED_PREFIX + c for c in effects.columns if c not in PERTURBATION_KEYS})
    return _left_join(report, table, PERTURBATION_KEYS)


def with_error_reasons(report: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    """The report with `error_reasons` on each row, `{reason: episodes}` for the condition's errored episodes (most
    frequent first, API keys redacted as the terminal shows them, `{}` where none errored); the report itself when no
    episode of the run errored."""
    errored = episodes[episodes.status == "error"] if "status" in episodes else episodes.iloc[:0]
    keys = [c for c in CONDITIONS if c in report and c in errored]
    if errored.empty or not keys:
        return report
    reasons = {}
    for condition, group in errored.assign(temperature=errored.temperature.astype(float)).groupby(keys, dropna=False):
        counts = group.error_reason.fillna("no reason recorded").value_counts()
        reasons[condition if isinstance(condition, tuple) else (condition,)] = {redact(str(k)): int(v) for k, v in counts.items()}
    rows = report.assign(temperature=report.temperature.astype(float))[keys].itertuples(index=False, name=None)
    return report.assign(error_reasons=[reasons.get(tuple(row), {}) for row in rows])


def _left_join(report: pd.DataFrame, table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Every report row, in its order, with the table's columns where its keys match (temperatures compared as floats)."""
    left = report.assign(temperature=report.temperature.astype(float))
    right = table.assign(temperature=table.temperature.astype(float)).drop_duplicates(keys)
    joined = left.merge(right, on=keys, how="left", validate="many_to_one")
    joined.index = report.index
    return joined.assign(temperature=report.temperature)
