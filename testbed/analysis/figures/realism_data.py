"""The numbers of `testbed plot`'s realism figures: how far each simulated user condition is from the real users.

A run over real conversations (dataset `sharegpt`) holds a human-reference episode per context beside
the simulated users' episodes (testbed.analysis.realism.runs). `realism_conditions` gives, per simulated
condition, the discriminator's AUC and the label-mix JSD with their 95 % intervals
(testbed.analysis.realism.table's table); `realism_labels` gives the label mix of the real users and of each
condition. Declared in testbed.analysis.figures.data's registry with the other figures; drawn by
testbed.analysis.figures.realism_drawing, so building the numbers never imports matplotlib.
"""

from __future__ import annotations

import pandas as pd

from testbed.analysis.figures.registry import FigureInputs
from testbed.analysis.realism.table import REAL_SOURCE
from testbed.analysis.realism.runs import realism_turns, run_realism
from testbed.judges.taxonomy import LABELS
from testbed.specs.registries import FigureEntry

REAL_USERS = "real users"
"""The condition label of the real users' row of the label mix, and of the baseline line on the follow-up figure."""
NO_REFERENCE = ("the run holds no human-reference episode beside a simulated one: run a scenario over real "
                "conversations (dataset: sharegpt), which stores the real next turn of each context")
RESAMPLES = 1000
"""Bootstrap resamples of contexts behind the JSD intervals of the `realism` figure (the AUC's come from permutations)."""
CONDITIONS_COLUMNS = ["condition", "user_model", "user_mode", "temperature", "contexts", "simulated", "real",
                      "auc", "auc_lo", "auc_hi", "auc_p", "jsd", "jsd_lo", "jsd_hi", "weak_reference"]
"""`realism_conditions`' frame: one row per simulated condition, its AUC (with its permutation p-value) and JSD with
their 95 % intervals."""
LABELS_COLUMNS = ["condition", "user_model", "user_mode", "temperature", "labelled",
                  *[f"share_{label}" for label in LABELS]]
"""`realism_labels`' frame: the real users' row first, then one row per simulated condition."""


def condition_name(user_model: str, user_mode: str, temperature: float) -> str:
    """How a simulated condition is named on the figures' axes: model · mode · T."""
    return f"{user_model} · {user_mode} · T={float(temperature):g}"


def realism_conditions(inputs: FigureInputs) -> tuple[pd.DataFrame, str | None]:
    """Per simulated condition of a run over real contexts, the discriminator's out-of-fold AUC (0.5: it cannot tell
    the condition's turns from the real users') and the Jensen–Shannon divergence of its label mix from the real users'
    (0: the same mix), each with its 95 % interval (the AUC's from within-context permutations, with its p-value;
    the JSD's a bootstrap over contexts; `realism.realism_table`, seed 0).
    `weak_reference` is true on every row when the real turns answered another message than the simulated users saw."""
    realism = run_realism(inputs.store, inputs.run_id, inputs.judge, resamples=RESAMPLES)
    if realism.empty:
        return pd.DataFrame(columns=CONDITIONS_COLUMNS), NO_REFERENCE
    table = realism.table
    names = [condition_name(m, u, t) for m, u, t in zip(table.user_model, table.user_mode, table.temperature)]
    frame = table.assign(condition=names, weak_reference=realism.weak_reference)[CONDITIONS_COLUMNS]
    drawn = frame[frame.auc.notna() | frame.jsd.notna()].reset_index(drop=True)
    if drawn.empty:
        return drawn, ("no simulated condition has an AUC or a label-mix JSD: too few shared contexts "
                       "(the discriminator needs 5) and no labels on one side")
    return drawn, None


REALISM = FigureEntry("realism", "Simulated vs real users: discriminator AUC and label-mix JSD per condition", realism_conditions,
                      "testbed.analysis.figures.realism_drawing:draw_realism")
"""The figure of `realism_conditions`: each simulated condition's distance from the real users."""


def _label_row(condition: str, user_model: str, user_mode: str, temperature: float, labels: pd.Series) -> dict:
    """One bar of the label mix: the share of each taxonomy label among the group's labelled turns."""
    known = labels[labels.isin(LABELS)]
    row = {"condition": condition, "user_model": user_model, "user_mode": user_mode, "temperature": temperature,
           "labelled": len(known)}
    for label in LABELS:
        row[f"share_{label}"] = float((known == label).sum()) / len(known) if len(known) else float("nan")
    return row


def realism_labels(inputs: FigureInputs) -> tuple[pd.DataFrame, str | None]:
    """The label mix of the real users' turns (first row, condition `REAL_USERS`) and of each simulated condition's
    first turns on the same run's real contexts, over the turns the judge gave a taxonomy label (`labelled` is the
    denominator). Every turn of a condition counts, not only those on contexts the real users' row shares."""
    turns = realism_turns(inputs.store, inputs.run_id, inputs.judge)
    real, simulated = turns[turns.source == REAL_SOURCE], turns[turns.source != REAL_SOURCE]
    if real.empty or simulated.empty:
        return pd.DataFrame(columns=LABELS_COLUMNS), NO_REFERENCE
    rows = [_label_row(REAL_USERS, "; ".join(sorted(set(real.user_model))), "human", float("nan"), real.label)]
    for (model, mode, temperature), g in simulated.groupby(["user_model", "user_mode", "temperature"], sort=True):
        rows.append(_label_row(condition_name(model, mode, temperature), model, mode, float(temperature), g.label))
    frame = pd.DataFrame(rows, columns=LABELS_COLUMNS)
    if frame.labelled.iloc[0] == 0 or not (frame.labelled.iloc[1:] > 0).any():
        return frame.iloc[0:0], "the judge gave no 8-way label to the real users' turns or to any simulated condition's"
    return frame[frame.labelled > 0].reset_index(drop=True), None


REALISM_LABELS = FigureEntry("realism-labels", f"Label mix of first user turns on real contexts, {REAL_USERS} first", realism_labels,
                             "testbed.analysis.figures.realism_drawing:draw_realism_labels")
"""The figure of `realism_labels`: the real users' label mix beside each simulated condition's."""
