"""Follow-up rates corrected for the judge's own errors, as a posterior that stays inside [0, 1].

A judge with sensitivity `se` and specificity `sp` turns a true follow-up share `p` into an
observed share `q = se·p + (1 − sp)·(1 − p)`; inverted, `p = (q + sp − 1) / (se + sp − 1)`
(Rogan & Gladen 1978, `rogan_gladen`). `se` and `sp` are themselves estimates from a labelled
set, so the interval has to carry three uncertainties: the run's own sampling, and the labelled
set's positives and negatives.

`corrected_rate` is the posterior of `p` given the run's count `x ~ Binomial(n, q(p, se, sp))`,
with `se ~ Beta(tp + ½, fn + ½)` and `sp ~ Beta(tn + ½, fp + ½)` (Jeffreys, from the labelled
counts), restricted to draws with `se + sp > 1` (a judge known to beat chance), and a flat prior on
`p`. It is computed on a grid of cells over [0, 1], integrating `se` and `sp` by seeded, stratified
Monte Carlo draws (a few milliseconds a call). The point estimate is the posterior median and the interval the highest-posterior-density
cells holding `level` of the mass, closed up to 0 or 1 when almost no mass lies beyond (`BOUNDARY_SLACK`).
Why not invert each draw and clip, as before: clipping piles
every draw past a boundary onto it, so 0 follow-ups in 50 turns gave the interval [0, 0], as if a
run of 50 could prove a share of exactly zero. The posterior never leaves [0, 1], so there is
nothing to clip, and a share near a boundary gets an interval with that boundary as one end and an
honest width. The flat prior rather than Jeffreys' on `p`: Jeffreys' is infinite at 0 and pulls
small runs towards it; the flat one covers at least as well at the boundary
(tests/analysis/test_correction_coverage.py measures it).

`reviewed_rate` combines two parts of one run: the turns the fast judge was sure of, corrected
with its error rates in that margin band (`JudgeErrorRates.within`), and the doubted turns a
reviewer decided, corrected with the reviewer's rates or taken as right.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from scipy.stats import beta

COUNTS = ("true_positives", "false_negatives", "true_negatives", "false_positives")
"""The four counts an error-rates file holds, in the order `JudgeErrorRates` takes them."""

CELLS = 500
"""Cells of the grid over [0, 1] on which posteriors are computed: intervals end on their edges."""
BOUNDARY_SLACK = 0.005
"""Posterior mass below which the gap between an interval and 0 (or 1) is closed. A reviewed rate sums two parts'
posteriors, and a sum has no density at exactly 0 even when each part puts its most at 0: its highest-density
interval would start just above 0 and miss a true share of 0 (0 follow-ups in 13 + 2 turns gave [0.004, 0.38])."""
_EDGES = np.linspace(0.0, 1.0, CELLS + 1)
_MIDDLES32 = ((_EDGES[:-1] + _EDGES[1:]) / 2).astype(np.float32)


class BadErrorRates(ValueError):
    """An error-rates file that cannot be read as counts: the message names the file, what is wrong and how to write one.

    `field` is the count (or `turns`) that is missing or malformed, `(file)` when the file cannot be read as JSON,
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
    turns: tuple[tuple[float, bool, bool], ...] = ()
    """Per labelled turn `(margin, predicted follow-up, reference follow-up)`, margin as
    `testbed.judges.learned.doubt.stored_margin` (larger = surer); empty for a judge without margins."""

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
    def from_pairs(cls, predicted: list[bool], reference: list[bool], source: str,
                   margins: list[float] | None = None) -> "JudgeErrorRates":
        """Counts from paired verdicts (the judge's, the reference's), with each turn's margin kept when given."""
        predicted, reference = [bool(p) for p in predicted], [bool(r) for r in reference]
        if len(predicted) != len(reference) or (margins is not None and len(margins) != len(predicted)):
            raise ValueError("predicted, reference and margins must be paired, one per turn")
        tp = sum(p and r for p, r in zip(predicted, reference))
        fn = sum((not p) and r for p, r in zip(predicted, reference))
        tn = sum((not p) and (not r) for p, r in zip(predicted, reference))
        fp = sum(p and (not r) for p, r in zip(predicted, reference))
        turns = tuple((round(float(m), 6), p, r) for m, p, r in zip(margins, predicted, reference)) if margins is not None else ()
        return cls(tp, fn, tn, fp, source, turns)

    @property
    def measured_on_kind(self) -> str | None:
        """The scenario kind these counts were measured on, where the source names one (the trainer's per-kind
        files end in `(<kind> turns)`); None for counts over mixed or unnamed turns."""
        match = re.search(r"\((\w+) turns\)$", self.source)
        return match.group(1) if match else None

    def within(self, min_margin: float) -> "JudgeErrorRates":
        """The counts over the labelled turns with margin ≥ `min_margin`: the band the fast judge decides when
        the turns below it go to a reviewer. ValueError when these rates hold no per-turn margins."""
        if not self.turns:
            raise ValueError(f"the error rates from {self.source} hold no per-turn margins, so no margin band can be taken; "
                             "re-save them with `testbed eval-judge GOLD --judge learned --save-error-rates FILE`")
        kept = [t for t in self.turns if t[0] >= min_margin]
        band = JudgeErrorRates.from_pairs([p for _, p, _ in kept], [r for _, _, r in kept],
                                          f"{self.source}, margin ≥ {min_margin:.3g}", [m for m, _, _ in kept])
        return band

    def save(self, path: Path, *, judge: str) -> None:
        """Write the counts as JSON with the judge they measure (what `report --correct-with` and `load` read),
        and the per-turn margins as one compact line per turn when there are any."""
        blob = {"judge": judge, **{k: v for k, v in asdict(self).items() if k != "turns"}}
        text = json.dumps(blob, indent=2)
        if self.turns:
            rows = ",\n".join("    " + json.dumps([m, p, r]) for m, p, r in self.turns)
            text = text[:-2] + ',\n  "turns": [\n' + rows + "\n  ]\n}"
        Path(path).write_text(text + "\n")

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
        rates = cls(*counts, str(blob.get("source", path)), _turns(path, blob.get("turns", [])))
        if rates.turns and rates != replace(cls.from_pairs([p for _, p, _ in rates.turns], [r for _, _, r in rates.turns],
                                                           rates.source, [m for m, _, _ in rates.turns])):
            raise BadErrorRates(path, "turns", ValueError("turns: the per-turn verdicts do not add up to the four counts"))
        return rates


def _count(path: Path, blob: dict, name: str) -> int:
    """One count of a loaded file, as an int; BadErrorRates naming it when it is missing or not a number."""
    try:
        return int(blob[name])
    except KeyError as exc:
        raise BadErrorRates(path, name, exc) from None
    except (ValueError, TypeError) as exc:
        raise BadErrorRates(path, name, type(exc)(f"{name}: {exc}")) from None


def _turns(path: Path, rows) -> tuple[tuple[float, bool, bool], ...]:
    """The `turns` of a loaded file; BadErrorRates naming `turns` unless each is `[margin, predicted, reference]`."""
    if not isinstance(rows, list):
        raise BadErrorRates(path, "turns", TypeError(f"turns: a {type(rows).__name__}, not a list of [margin, predicted, reference]"))
    out = []
    for k, row in enumerate(rows):
        ok = (isinstance(row, list) and len(row) == 3 and isinstance(row[0], (int, float)) and not isinstance(row[0], bool)
              and math.isfinite(row[0]) and isinstance(row[1], bool) and isinstance(row[2], bool))
        if not ok:
            raise BadErrorRates(path, "turns", TypeError(f"turns[{k}]: {json.dumps(row)[:60]} is not [margin, predicted, reference]"))
        out.append((float(row[0]), row[1], row[2]))
    return tuple(out)


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


def _informative(rates: JudgeErrorRates) -> bool:
    """Whether the judge beats chance at its point estimates (se + sp > 1), so it can be inverted."""
    se, sp = rates.sensitivity, rates.specificity
    return not (math.isnan(se) or math.isnan(sp) or se + sp <= 1.0)


def _strata(rng: np.random.Generator, draws: int) -> np.ndarray:
    """Stratified uniforms, one in each of `draws` equal slices of [0, 1] in seeded random order (Latin hypercube
    when two are paired): a smoother integral over se and sp than as many independent draws."""
    return (rng.permutation(draws) + rng.random(draws)) / draws


def _posterior(followups: int, n: int, rates: JudgeErrorRates | None, rng: np.random.Generator, draws: int) -> np.ndarray:
    """Posterior mass of each grid cell for the true share, flat prior; `rates=None` takes the judge as right."""
    if rates is None:
        floor, slope = np.zeros(1), np.ones(1)
    else:
        se = beta.ppf(_strata(rng, draws), rates.true_positives + 0.5, rates.false_negatives + 0.5)
        sp = beta.ppf(_strata(rng, draws), rates.true_negatives + 0.5, rates.false_positives + 0.5)
        usable = se + sp > 1.0
        floor, slope = 1.0 - sp[usable], (se + sp - 1.0)[usable]
    q = floor.astype(np.float32)[None, :] + slope.astype(np.float32)[None, :] * _MIDDLES32[:, None]
    with np.errstate(divide="ignore"):
        log_likelihood = followups * np.log(q) if followups else np.zeros_like(q)
        if n - followups:
            log_likelihood += (n - followups) * np.log1p(-q)
    log_likelihood -= log_likelihood.max()
    mass = np.exp(log_likelihood, out=log_likelihood).sum(axis=1, dtype=np.float64)
    return mass / mass.sum()


def _summary(observed: float, mass: np.ndarray, level: float) -> CorrectedRate:
    """Median and highest-density interval of a grid posterior: the fewest cells holding `level`, spanned edge to edge,
    reaching out to 0 or 1 where less than `BOUNDARY_SLACK` of the mass lies beyond its end."""
    order = np.argsort(-mass, kind="stable")
    k = int(np.searchsorted(np.cumsum(mass[order]), level)) + 1
    chosen = order[:min(k, CELLS)]
    cumulative = np.cumsum(mass)
    first, last = int(chosen.min()), int(chosen.max())
    if first and cumulative[first - 1] < BOUNDARY_SLACK:
        first = 0
    if last < CELLS - 1 and 1.0 - cumulative[last] < BOUNDARY_SLACK:
        last = CELLS - 1
    cell = min(int(np.searchsorted(cumulative, 0.5)), CELLS - 1)
    within = (0.5 - (cumulative[cell] - mass[cell])) / mass[cell] if mass[cell] > 0 else 0.5
    median = float(_EDGES[cell] + within * (_EDGES[cell + 1] - _EDGES[cell]))
    return CorrectedRate(observed, median, float(_EDGES[first]), float(_EDGES[last + 1]), True)


def corrected_rate(followups: int, n: int, rates: JudgeErrorRates, *, level: float = 0.95, seed: int = 0,
                   draws: int = 600) -> CorrectedRate:
    """The corrected share of `followups` judged follow-ups among `n` scored turns: posterior median and
    highest-density interval (see the module docstring); NaNs and informative=False when n is 0 or the judge
    does not beat chance."""
    observed = followups / n if n else math.nan
    if n == 0 or not _informative(rates):
        return CorrectedRate(observed, math.nan, math.nan, math.nan, False)
    return _summary(observed, _posterior(followups, n, rates, np.random.default_rng(seed), draws), level)


def reviewed_rate(fast: tuple[int, int, JudgeErrorRates], review: tuple[int, int, JudgeErrorRates | None], *,
                  level: float = 0.95, seed: int = 0, draws: int = 600, samples: int = 20000) -> CorrectedRate:
    """The follow-up share over all turns of a run whose sure turns the fast judge decided and whose doubted turns a reviewer did.

    `fast` is `(follow-ups, turns, error rates in the fast judge's band)`, `review` the same for the
    reviewer, its rates `None` when it is taken as right. Each part's share is the posterior of
    `corrected_rate` (of the plain binomial for a reviewer taken as right); the whole is sampled as
    `(n_f·p_f + n_r·p_r) / (n_f + n_r)` from both and summarised on the same grid.
    """
    (x_f, n_f, fast_rates), (x_r, n_r, review_rates) = fast, review
    total = n_f + n_r
    observed = (x_f + x_r) / total if total else math.nan
    if total == 0 or (n_f and not _informative(fast_rates)) or (n_r and review_rates is not None and not _informative(review_rates)):
        return CorrectedRate(observed, math.nan, math.nan, math.nan, False)
    rng = np.random.default_rng(seed)
    share = np.zeros(samples)
    for x, n, rates in ((x_f, n_f, fast_rates), (x_r, n_r, review_rates)):
        if n:
            mass = _posterior(x, n, rates, rng, draws)
            cells = rng.choice(CELLS, size=samples, p=mass)
            share += n / total * (_EDGES[cells] + rng.random(samples) / CELLS)
    counts = np.bincount(np.minimum((share * CELLS).astype(int), CELLS - 1), minlength=CELLS)
    return _summary(observed, counts / samples, level)
