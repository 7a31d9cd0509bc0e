"""The realism table's follow-up rates corrected for the judge's measured errors, as the run report corrects its own.

The simulated and the real users' turns are labelled by one judge, and a judge that misses half
the follow-ups (or calls some thanks a follow-up) moves both rates; the raw rates can then differ
by less, or more, than the users do. With the judge's error counts on a labelled set
(`testbed.analysis.judge_quality.correction.JudgeErrorRates`, what `report --correct-with` reads)
each side's rate is corrected by `corrected_rate`, its interval carrying the rates' uncertainty as
well as the turns'. Reviewed labels are corrected stage by stage as the run report does
(`review_correction`): the turns the fast judge decided with its errors within its band, the turns
a reviewer decided taken as right; the turns frame marks the latter in its optional `reviewed` column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from testbed.analysis.judge_quality.correction import JudgeErrorRates, corrected_rate, reviewed_rate

SIDES = ("sim", "real")
"""The realism table's two follow-up rates, simulated and real, each corrected beside its raw rate."""


def corrected_columns(side: str) -> list[str]:
    """The corrected rate of one side with its interval: `followup_<side>_corrected`, `…_lo`, `…_hi`."""
    return [f"followup_{side}_corrected", f"followup_{side}_corrected_lo", f"followup_{side}_corrected_hi"]


CORRECTED_WITH = "corrected_with"
"""The column that names the error counts (and, for reviewed labels, how each stage was corrected)."""


@dataclass(frozen=True)
class FollowupCorrection:
    """How the realism table corrects follow-up rates: the error counts of the judge that decided the turns."""

    rates: JudgeErrorRates
    """The fast judge's follow-up error counts, applied to every turn it decided (within its band, for reviewed labels)."""
    described: str
    """What `corrected_with` says: the counts' source, and for reviewed labels what the reviewed part was taken as."""


def corrected_followup(followup: np.ndarray, reviewed: np.ndarray, correction: FollowupCorrection) -> tuple[float, float, float]:
    """(corrected rate, lo, hi) of judged turns' follow-up decisions; NaNs with no turn or a judge no better than chance.

    `reviewed` marks the turns a reviewer decided: taken as right, combined with the corrected fast
    part by `reviewed_rate`; with none, the plain `corrected_rate`.
    """
    n_review = int(reviewed.sum())
    x_review = int((followup & reviewed).sum())
    n_fast = len(followup) - n_review
    x_fast = int(followup.sum()) - x_review
    if n_review == 0:
        out = corrected_rate(x_fast, n_fast, correction.rates)
    else:
        out = reviewed_rate((x_fast, n_fast, correction.rates), (x_review, n_review, None))
    return (out.corrected, out.lo, out.hi) if out.informative else (math.nan, math.nan, math.nan)
