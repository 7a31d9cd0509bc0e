"""The τ² figure of `testbed plot` drawn with matplotlib (headless Agg): reward against the simulated users' fault rate.

Named by its entry in testbed.analysis.figures.data (`tau2-users`); its numbers are testbed.analysis.tau2.figures',
and every error bar is an interval its CSV holds. The look is testbed.analysis.figures.style's.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from testbed.analysis.tau2.figures import x_label  # noqa: E402
from testbed.analysis.figures.style import SHARE, SIZE, colour_map, heading, save_png  # noqa: E402

_MARKERS = "osD^vP*Xh<>"


def _bars(frame: pd.DataFrame, value: str, lo: str, hi: str) -> np.ndarray:
    """Error-bar lengths below and above each value (0 where an interval is undefined)."""
    return np.nan_to_num(np.vstack([frame[value] - frame[lo], frame[hi] - frame[value]]).clip(min=0))


def _stacked(frame: pd.DataFrame, i: int) -> int:
    """How many earlier points sit at the same place as point `i`, so coinciding points' labels stack instead of overlap."""
    here = frame.iloc[i]
    before = frame.iloc[:i]
    return int(((before.x_share - here.x_share).abs().lt(0.02) & (before.reward - here.reward).abs().lt(0.02)).sum())


def draw_tau2_users(data, path: Path) -> None:
    """Scatter of mean reward (y) against the share of episodes with any user fault (x), one point per user model ×
    user temperature with both 95 % intervals as error bars: colour = user model, marker = temperature, each point
    labelled with its temperature and episode count."""
    frame = data.frame
    colours = colour_map(frame.user_model)
    temperatures = sorted(set(frame.user_temperature))
    markers = {t: _MARKERS[i % len(_MARKERS)] for i, t in enumerate(temperatures)}
    fig, ax = plt.subplots(figsize=SIZE)
    for i in range(len(frame)):
        row = frame.iloc[i:i + 1]
        r = row.iloc[0]
        ax.errorbar(row.x_raw, row.reward, xerr=_bars(row, "x_raw", "x_raw_lo", "x_raw_hi"), fmt="none",
                    color=colours[r.user_model], alpha=0.35, capsize=5, elinewidth=3)
        ax.errorbar(row.x_share, row.reward, xerr=_bars(row, "x_share", "x_lo", "x_hi"),
                    yerr=_bars(row, "reward", "reward_lo", "reward_hi"), fmt=markers[r.user_temperature],
                    color=colours[r.user_model], markersize=8, capsize=3, elinewidth=1.2)
        ax.annotate(f"T={r.user_temperature:g} (n={r.scored})", (r.x_share, r.reward), textcoords="offset points",
                    xytext=(7, 5 + 9 * _stacked(frame, i)), fontsize=7, color=colours[r.user_model])
    handles = [Line2D([], [], color=colours[m], marker="o", linestyle="", label=m) for m in sorted(colours)]
    handles += [Line2D([], [], color="#555555", marker=markers[t], linestyle="", label=f"user T={t:g}") for t in temperatures]
    ax.set_xlim(*SHARE)
    ax.set_ylim(*SHARE)
    ax.set_xlabel(x_label(frame), fontsize=7)
    ax.set_ylabel("mean τ² reward (0–1)")
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False,
              title="user model · temperature\n(bars: 95%; pale x bar: raw)", title_fontsize=7)
    heading(fig, data.title)
    save_png(fig, path)
