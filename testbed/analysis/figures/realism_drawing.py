"""The realism figures of `testbed plot` drawn with matplotlib (headless Agg): simulated users against real users.

Named by their entries in testbed.analysis.figures.data (`realism`, `realism-labels`); their numbers are
testbed.analysis.figures.realism_data', and every error bar is an interval its CSV holds. The look is
testbed.analysis.figures.style's; the label colours are those of the other label figures.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from testbed.analysis.figures.drawing import label_mix_bars  # noqa: E402
from testbed.analysis.figures.style import SIZE, heading, save_png  # noqa: E402
from testbed.judges.taxonomy import LABELS  # noqa: E402

AUC_AXIS = (0.4, 1.0)
"""The AUC axis: chance (0.5) near the left edge, a perfect discriminator at the right."""
WEAK_NOTE = " (weak reference: the real users answered another message than the simulated users saw)"


def _bars(frame: pd.DataFrame, value: str, lo: str, hi: str) -> np.ndarray:
    """Error-bar lengths left and right of each value (0 where an interval is undefined)."""
    return np.nan_to_num(np.vstack([frame[value] - frame[lo], frame[hi] - frame[value]]).clip(min=0))


def _height(rows: int) -> float:
    return max(2.5, 1.2 + 0.5 * rows)


def draw_realism(data, path: Path) -> None:
    """Left: each simulated condition's discriminator AUC with its 95 % interval, a dashed line at 0.5
    (indistinguishable from real users); right: the JSD of its label mix from the real users' (0 = the same mix)."""
    frame = data.frame
    y = np.arange(len(frame))
    ticks = [f"{r.condition}\n(n={int(r.contexts)} contexts)" for r in frame.itertuples()]
    fig, (left, right) = plt.subplots(1, 2, figsize=(SIZE[0] + 3.0, _height(len(frame))), sharey=True)
    left.errorbar(frame.auc, y, xerr=_bars(frame, "auc", "auc_lo", "auc_hi"), fmt="o", color="#2166ac", capsize=3)
    left.axvline(0.5, color="#555555", linestyle="--", linewidth=1)
    left.text(0.505, 1.0, "0.5: indistinguishable from real users", transform=left.get_xaxis_transform(),
              fontsize=7, color="#555555", va="bottom")
    left.set_xlim(*AUC_AXIS)
    left.set_xlabel("discriminator AUC, simulated vs real (95% permutation interval)")
    right.errorbar(frame.jsd, y, xerr=_bars(frame, "jsd", "jsd_lo", "jsd_hi"), fmt="s", color="#b2182b", capsize=3)
    right.axvline(0.0, color="#555555", linestyle="--", linewidth=1)
    top = np.nanmax(np.r_[frame.jsd_hi.to_numpy(float), frame.jsd.to_numpy(float), 0.05])
    right.set_xlim(-0.02 * top, 1.1 * top)
    right.set_xlabel("label-mix JSD from real users (bits; 0 = same mix)")
    left.set_yticks(y, ticks, fontsize=8)
    left.invert_yaxis()
    for ax in (left, right):
        ax.grid(alpha=0.3, axis="x")
    weak = bool(frame.weak_reference.any())
    heading(fig, data.title + (WEAK_NOTE if weak else ""))
    save_png(fig, path)


def draw_realism_labels(data, path: Path) -> None:
    """Stacked horizontal bars of the label mix, the real users' first (bold tick), then each simulated condition;
    shares of 8 % or more printed inside their segment, n in each tick label."""
    frame = data.frame
    fig, ax = plt.subplots(figsize=(SIZE[0], _height(len(frame))))
    label_mix_bars(ax, frame, list(LABELS), [f"{r.condition}\n(n={r.labelled})" for r in frame.itertuples()],
                   "share of labelled first user turns on real contexts (0–1)")
    ax.get_yticklabels()[0].set_fontweight("bold")
    ax.axhline(0.5, color="#333333", linewidth=1)
    heading(fig, data.title)
    save_png(fig, path)
