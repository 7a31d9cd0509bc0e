"""The corrected interval's coverage, measured: a seeded simulation of the learned judge's situation.

In each replicate a labelled set measures the judge (true se 0.65, sp 0.93; 55 positives and 335
negatives, like learned-2 on the gold dev set), a run of `n` turns with true follow-up share `p`
is judged, and `corrected_rate`'s 95 % interval either holds `p` or not.
"""

from __future__ import annotations

import numpy as np

from testbed.analysis.judge_quality.correction import JudgeErrorRates, corrected_rate

SE, SP, POSITIVES, NEGATIVES = 0.65, 0.93, 55, 335
SHARES = (0.0, 0.02, 0.1, 0.3)
RUN_SIZES = (15, 50, 500)
REPLICATES = 400


def coverage(p: float, n: int, rng: np.random.Generator) -> tuple[float, float]:
    """Share of replicates whose interval holds `p`, and the mean interval width."""
    hits, widths = 0, 0.0
    for _ in range(REPLICATES):
        tp, tn = rng.binomial(POSITIVES, SE), rng.binomial(NEGATIVES, SP)
        rates = JudgeErrorRates(int(tp), POSITIVES - int(tp), int(tn), NEGATIVES - int(tn), "sim")
        x = int(rng.binomial(n, SE * p + (1 - SP) * (1 - p)))
        out = corrected_rate(x, n, rates, seed=int(rng.integers(1 << 30)))
        if not out.informative:
            continue
        hits += out.lo <= p <= out.hi
        widths += out.hi - out.lo
    return hits / REPLICATES, widths / REPLICATES


def test_the_interval_covers_the_true_share_at_least_93_percent_of_the_time_in_every_cell():
    rng = np.random.default_rng(20260)
    table = {(p, n): coverage(p, n, rng) for p in SHARES for n in RUN_SIZES}
    lines = ["true share | " + " | ".join(f"n={n:<4} cover  width" for n in RUN_SIZES)]
    lines += [f"{p:10.2f} | " + " | ".join(f"{table[p, n][0]:11.3f} {table[p, n][1]:6.3f}" for n in RUN_SIZES) for p in SHARES]
    print("\n".join(lines))
    low = {cell: c for cell, (c, _) in table.items() if c < 0.93}
    assert not low, "coverage below 93 % at nominal 95 %:\n" + "\n".join(lines)
    assert all(table[p, 15][1] > table[p, 500][1] for p in SHARES), "a longer run gives a narrower interval"
