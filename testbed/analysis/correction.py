"""Follow-up rates corrected for the judge's own errors (Rogan–Gladen), with honest intervals.

A judge with sensitivity `se` and specificity `sp` turns a true follow-up share `p` into an
observed share `q = se·p + (1 − sp)·(1 − p)`; inverted, `p = (q + sp − 1) / (se + sp − 1)`
(Rogan & Gladen 1978). The judge's `se` and `sp` are themselves estimates from a labelled set,
so the interval here carries three uncertainties at once: the observed share (the run's turns),
and sensitivity and specificity (the labelled set's positives and negatives). It is a Monte
Carlo interval over Jeffreys Beta posteriors of all three, seeded, clipped to [0, 1]; the
point estimate is the plain Rogan–Gladen value from the counts. When `se + sp ≤ 1` the judge
carries no information and nothing is corrected.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

COUNTS = ("true_positives", "false_negatives", "true_negatives", "false_positives")
"""The four counts an error-rates file holds, in the order `JudgeErrorRates` takes them."""


class BadErrorRates(ValueError):
    """An error-rates file that cannot be read as counts: the message names the file, what is wrong and how to write one.

    `field` is the count that is missing or malformed, `(file)` when the file cannot be read as JSON,
    `(top level)` when the JSON is not an object.
    """

    def __init__(self, path: Path | str, field: str, cause: Exception):
        self.path, self.field = str(path), field
        super().__init__(f"{path}: not error counts ({type(cause).__name__}: {cause}); write them with "
                         "`testbed eval-judge GOLD --judge J --save-error-rates FILE`")


@dataclass(frozen=True)
class JudgeErrorRates:
    """A judge's follow-up verdicts against reference labels: counts, so the uncertainty stays known."""

    true_positives: int
    false_negatives: int
    true_negatives: int
    false_positives: int
    source: str
    """Which labelled set measured them (a file, or `cv:<set>` for cross-validated predictions)."""

    @property
    def sensitivity(self) -> float:
        """Share of reference follow-ups the judge calls follow-ups."""
        n = self.true_positives + self.false_negatives
        return self.true_positives / n if n else math.nan

    @property
    def specificity(self) -> float:
        """Share of reference non-follow-ups the judge calls non-follow-ups."""
        n = self.true_negatives + self.false_positives
        return self.true_negatives / n if n else math.nan

    @classmethod
    def from_pairs(cls, predicted: list[bool], reference: list[bool], source: str) -> "JudgeErrorRates":
        """Counts from paired verdicts (the judge's, the reference's)."""
        tp = sum(p and r for p, r in zip(predicted, reference))
        fn = sum((not p) and r for p, r in zip(predicted, reference))
        tn = sum((not p) and (not r) for p, r in zip(predicted, reference))
        fp = sum(p and (not r) for p, r in zip(predicted, reference))
        return cls(tp, fn, tn, fp, source)

    def save(self, path: Path, *, judge: str) -> None:
        """Write the counts as JSON with the judge they measure (what `report --correct-with` and `load` read)."""
        Path(path).write_text(json.dumps({"judge": judge, **asdict(self)}, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> "JudgeErrorRates":
        """The counts `save` wrote (the source defaults to the file's name); BadErrorRates, naming the field, when malformed."""
        try:
            blob = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BadErrorRates(path, "(file)", exc) from None
        if not isinstance(blob, dict):
            raise BadErrorRates(path, "(top level)", TypeError(f"the top level is a {type(blob).__name__}, not a JSON object"))
        counts = [_count(path, blob, name) for name in COUNTS]
        return cls(*counts, str(blob.get("source", path)))


def _count(path: Path, blob: dict, name: str) -> int:
    """One count of a loaded file, as an int; BadErrorRates naming it when it is missing or not a number."""
    try:
        return int(blob[name])
    except KeyError as exc:
        raise BadErrorRates(path, name, exc) from None
    except (ValueError, TypeError) as exc:
        raise BadErrorRates(path, name, type(exc)(f"{name}: {exc}")) from None


@dataclass(frozen=True)
class CorrectedRate:
    """The observed and the corrected follow-up share of one group of turns."""

    observed: float
    corrected: float
    lo: float
    hi: float
    informative: bool
    """False when se + sp ≤ 1 (or either is unknown): the judge cannot be inverted, and corrected is NaN."""


def rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float:
    """The true share implied by an observed share and the judge's error rates, clipped to [0, 1]."""
    denominator = sensitivity + specificity - 1.0
    if not denominator > 0:
        return math.nan
    return min(1.0, max(0.0, (observed + specificity - 1.0) / denominator))


def corrected_rate(followups: int, n: int, rates: JudgeErrorRates, *, draws: int = 4000, seed: int = 0,
                   level: float = 0.95) -> CorrectedRate:
    """The corrected share of `followups` judged follow-ups among `n` scored turns, with its interval."""
    observed = followups / n if n else math.nan
    se, sp = rates.sensitivity, rates.specificity
    if n == 0 or math.isnan(se) or math.isnan(sp) or se + sp <= 1.0:
        return CorrectedRate(observed, math.nan, math.nan, math.nan, False)
    rng = np.random.default_rng(seed)
    q = rng.beta(followups + 0.5, n - followups + 0.5, draws)
    se_draws = rng.beta(rates.true_positives + 0.5, rates.false_negatives + 0.5, draws)
    sp_draws = rng.beta(rates.true_negatives + 0.5, rates.false_positives + 0.5, draws)
    denominator = se_draws + sp_draws - 1.0
    usable = denominator > 0
    p = np.clip((q[usable] + sp_draws[usable] - 1.0) / denominator[usable], 0.0, 1.0)
    tail = (1.0 - level) / 2
    lo, hi = (float(np.quantile(p, tail)), float(np.quantile(p, 1 - tail))) if len(p) else (math.nan, math.nan)
    return CorrectedRate(observed, rogan_gladen(observed, se, sp), lo, hi, True)
