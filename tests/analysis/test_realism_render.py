"""The realism table as printed: one row per simulated condition, the real users last, hostile names neutralised."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.realism.table import HUMAN_BASELINE_COLUMNS, REALISM_COLUMNS
from testbed.analysis.realism.render import HEADER, as_markdown, realism_rows
from testbed.analysis.realism.runs import RunRealism


def realism(model: str = "m", weak: bool = False) -> RunRealism:
    row = dict.fromkeys(REALISM_COLUMNS, 0.5)
    row.update(user_model=model, user_mode="raw", temperature=1.0, contexts=200, simulated=200, real=200, auc=0.73, auc_lo=0.68,
               auc_hi=0.77, auc_p=0.005, giveaways="fewer lowercase starts (-0.8)", words_sim=22.0, words_real=12.0)
    base = dict.fromkeys(HUMAN_BASELINE_COLUMNS, 0.25)
    base.update(turns=200, followup=0.14, followup_lo=0.10, followup_hi=0.19, words=12.0)
    return RunRealism(pd.DataFrame([row], columns=REALISM_COLUMNS), pd.DataFrame([base], columns=HUMAN_BASELINE_COLUMNS), weak)


def test_rows_hold_each_condition_then_the_real_users():
    rows = realism_rows(realism())
    assert [r[0] for r in rows] == ["m", "real users"] and all(len(r) == len(HEADER) for r in rows)
    assert rows[0][4] == "0.73 (0.68–0.77), p 0.005" and rows[0][10] == "22 / 12"
    assert rows[1][7] == "14% (10%–19%)" and "follow up 25%" in rows[1][-1]


def test_markdown_neutralises_a_hostile_model_name_and_says_when_the_reference_is_weak():
    text = as_markdown(realism("evil\x1b[31m|name", weak=True))
    assert "\x1b" not in text and "evil" in text
    assert "weak reference" in text.splitlines()[0]
    assert text.count("\n| ") == 3, "header and two rows; the name's pipe is escaped"
