"""The headline: how much of a condition's failure (and success) the simulated user carries, corrected for the detector's error.

Per condition group, of its finished **failed** episodes the whole-conversation reviewer scored, the share with a
`critical_hindered` error (`failed_hindered_review`), and of its **successful** ones the share with a `critical_helped`
error (`success_helped_review`); of its checked finished episodes, the share with any rule fault (`rules_any`). Each
comes raw with its Wilson 95 % interval and, where the detector's error was measured on the gold set's held-out part
(testbed.analysis.tau2.fault_error_rates), corrected with `corrected_rate` (`_corrected` with `_corrected_lo`/`_hi`,
the interval carrying the gold set's uncertainty). `<share>_detector` names the detector and `<share>_correction` says
`corrected with <file>` or `uncorrected: no measured error for <identity>`. Episodes whose review was unscored are
counted apart (`headline_review_unscored`), never as clean. Where only the older flagged-fault review ran, the failed
episodes' share is its `hindered` verdicts', labelled as such in `_detector`.
"""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.judge_quality.correction import corrected_rate
from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.fault_error_rates import DetectorErrors, detector_error
from testbed.analysis.tau2.faults import review_rates
from testbed.analysis.tau2.stored_faults import RULES
from testbed.analysis.tau2.user_review import episode_verdicts
from testbed.store.records import JudgeIdentity

SHARES = ("failed_hindered_review", "success_helped_review", "rules_any")
"""The headline shares, each with its raw interval, corrected figures, detector and correction note."""
SUFFIXES = ("", "_lo", "_hi", "_n", "_corrected", "_corrected_lo", "_corrected_hi", "_detector", "_correction")
HEADLINE_COLUMNS = [*(f"{s}{x}" for s in SHARES for x in SUFFIXES), "headline_review_unscored"]
"""What `headline_cells` gives a report row, in order."""


def _flagged(faults: pd.DataFrame, flagged: tuple[JudgeIdentity, pd.DataFrame], errors: DetectorErrors) -> dict:
    """The failed episodes' hindered share by the older flagged-fault review (`review_rates`' `failed_hindered`)."""
    reviewer, reviewed = flagged
    rates = review_rates(faults, reviewed, reviewer)
    known = int(rates["failed_hindered_known"])
    hits = round(rates["failed_hindered"] * known) if known else 0
    return share(hits, known, f"{reviewer} (flagged-fault review: hindered)", detector_error(errors, str(reviewer), "critical_hindered"),
                 "critical_hindered", "failed_hindered_review")


def share(hits: int, n: int, detector: str, rates, measure: str, name: str) -> dict:
    """One headline share: raw with Wilson bounds, corrected where `rates` (a JudgeErrorRates or None) were measured."""
    lo, hi = wilson_interval(hits, n)
    out = {name: hits / n if n else math.nan, f"{name}_lo": lo, f"{name}_hi": hi, f"{name}_n": n,
           f"{name}_detector": detector}
    if rates is None:
        note, fixed = f"uncorrected: no measured error for {detector}", None
    else:
        fixed = corrected_rate(hits, n, rates)
        note = f"corrected with {rates.source}" if fixed.informative else f"uncorrected: {detector}'s measured {measure} error does not beat chance"
    informative = fixed is not None and fixed.informative
    out.update({f"{name}_corrected": fixed.corrected if informative else math.nan,
                f"{name}_corrected_lo": fixed.lo if informative else math.nan,
                f"{name}_corrected_hi": fixed.hi if informative else math.nan, f"{name}_correction": note})
    return out


def headline_cells(faults: pd.DataFrame, review: tuple[JudgeIdentity, pd.DataFrame] | None, errors: DetectorErrors,
                   flagged: tuple[JudgeIdentity, pd.DataFrame] | None = None) -> dict:
    """A condition group's `HEADLINE_COLUMNS` from its `fault_frame` rows (indexed by episode id), the run's
    `reviewed_turns` (None without a whole-conversation reviewer) and the detectors' measured errors. Where only the
    older flagged-fault review ran (`flagged`: testbed.analysis.tau2.faults.reviewed_faults), the failed episodes'
    share is its `hindered` verdicts', the detector labelled `<identity> (flagged-fault review: hindered)`."""
    done = faults[faults.status == "done"]
    checked = done[done.checked]
    rules = str(RULES)
    out = share(int(checked.any_fault.sum()), len(checked), rules, detector_error(errors, rules, "any"), "any", "rules_any")
    if review is None:
        return {**out, **_flagged(faults, flagged, errors)} if flagged is not None else out
    reviewer, turns = review
    mine = turns[turns.episode_id.isin(done.index)]
    if len(mine) == 0:
        return out
    verdicts = episode_verdicts(mine)
    scored = verdicts[verdicts.scored.astype(bool)]
    failed = done.index[done.failed]
    succeeded = done.index[~done.failed & done.reward.notna()]
    hindered = scored[scored.index.isin(failed)]
    helped = scored[scored.index.isin(succeeded)]
    identity = str(reviewer)
    out.update(share(int(hindered.hindered.astype(bool).sum()), len(hindered), identity,
                     detector_error(errors, identity, "critical_hindered"), "critical_hindered", "failed_hindered_review"))
    out.update(share(int(helped.helped.astype(bool).sum()), len(helped), identity,
                     detector_error(errors, identity, "critical_helped"), "critical_helped", "success_helped_review"))
    out["headline_review_unscored"] = len(verdicts) - len(scored)
    return out
