"""Rates with confidence intervals, so a reported share says how sure it is."""

from __future__ import annotations

import math


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial share (95 % by default); (nan, nan) when n is 0.

    Chosen over the normal approximation because it stays inside [0, 1] and behaves at 0 % and
    100 %, which the probe hits often (greedy decoding gives 0 % follow-ups for some models).
    """
    if n <= 0:
        return (math.nan, math.nan)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))
