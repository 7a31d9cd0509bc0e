"""The in-role survival picture: the one drawing of Kaplan–Meier curves, for `testbed plot` and `testbed graph` alike."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from testbed.analysis.figures.style import SHARE, SIZE, heading, save_png  # noqa: E402

CENSORED = "ticks: censored"
"""The legend title when the curves' groups need no name (`testbed graph`'s varying conditions)."""


def draw_survival(curves: Mapping[str, pd.DataFrame], path_png: Path | str, title: str, *,
                  legend_title: str = CENSORED) -> Path:
    """Step plot of Kaplan–Meier in-role survival, one curve per group (`testbed.analysis.drift.survival_curve`
    frames, keyed by the group's name, coloured in the mapping's order); censoring is marked with ticks so
    that a flat tail made of few episodes is not over-read. Each curve's n is its episodes (at risk at k = 0).

    The two commands drew these curves apart until they shared this function; where they differed, the
    `plot` figure's style won: its size and resolution, a share axis from −0.03 to 1.03 (a curve that
    falls to 0 stays visible, where `graph`'s axis from 0 hid it on the frame), the axis label naming the
    0–1 share, the legend outside the axes (it cannot cover a curve) and the wrapped title. The parent
    folder is created when missing, as `graph` needs.
    """
    path = Path(path_png)
    path.parent.mkdir(parents=True, exist_ok=True)
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=SIZE)
    top = 1
    for i, (name, curve) in enumerate(curves.items()):
        colour = cycle[i % len(cycle)]
        n = int(curve.at_risk.iloc[0]) if len(curve) else 0
        ax.step(curve.k, curve.survival, where="post", linewidth=2, color=colour, label=f"{name} (n={n})")
        if "censored_at_k" in curve:
            marks = curve[(curve.censored_at_k > 0) & (curve.k > 0)]
            ax.plot(marks.k, marks.survival, linestyle="none", marker="|", markersize=10, color=colour)
        top = max(top, int(curve.k.max()) if len(curve) else 1)
    ax.set_xlim(-0.1, top + 0.2)
    ax.set_xticks(range(top + 1))
    ax.set_ylim(*SHARE)
    ax.set_xlabel("generated user turns k")
    ax.set_ylabel("share of episodes still in role (0–1)")
    ax.grid(alpha=0.3)
    if curves:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, title=legend_title,
                  title_fontsize=7)
    heading(fig, title)
    save_png(fig, path)
    return path
