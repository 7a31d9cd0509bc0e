"""`testbed plot`'s figures drawn with matplotlib (headless Agg), each PNG written beside the CSV of its numbers.

Every rate axis is a share from 0 to 1 and every error bar or band is the Wilson 95 % interval
the CSV holds (`testbed.analysis.figures.data`), so a figure never shows a number its CSV lacks.
Each function here is named by its figure's entry (`FigureEntry(..., draw)` beside its builder in figure_data),
which is how `draw` finds it; the shared look is `testbed.analysis.figures.style`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from testbed.analysis.figures.data import FIGURES, FigureData, figure_data  # noqa: E402
from testbed.analysis.figures.style import SHARE, SIZE, colour_map, heading, save_png  # noqa: E402
from testbed.analysis.figures.graph_drawing import label_colour  # noqa: E402
from testbed.analysis.figures.realism_data import REAL_USERS  # noqa: E402
from testbed.analysis.figures.survival_drawing import draw_survival  # noqa: E402
from testbed.judges.taxonomy import taxonomy  # noqa: E402
from testbed.store import Store  # noqa: E402
from testbed.store.labels import JudgeIdentity  # noqa: E402

__all__ = ["PlotResult", "draw", "write_figures"]

_MARKERS = "osD^vP*Xh<>"
_FOLLOWUP_AXIS = "follow-up rate (share of scored user turns, 0–1)"


@dataclass
class PlotResult:
    """What `write_figures` did: the PNGs written (each with its `.csv` beside it) and the figures skipped, with why."""

    written: list[Path] = field(default_factory=list)
    """The PNG files written, in figure order; `path.with_suffix(".csv")` is each one's numbers."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(figure name, reason) for each figure that could not be drawn."""


def _bounds(frame: pd.DataFrame, value: str, lo: str, hi: str) -> np.ndarray:
    """Error-bar lengths below and above each value (0 where an interval is undefined)."""
    return np.nan_to_num(np.vstack([frame[value] - frame[lo], frame[hi] - frame[value]]).clip(min=0))


def draw_accuracy_vs_followup(data: FigureData, path: Path) -> None:
    """Scatter of task accuracy (x) against follow-up rate (y), one point per assistant model ×
    dataset with both Wilson intervals as error bars; colour = model, marker = dataset."""
    frame = data.frame
    colours = colour_map(frame.assistant_model)
    markers = {d: _MARKERS[i % len(_MARKERS)] for i, d in enumerate(sorted(set(frame.dataset)))}
    fig, ax = plt.subplots(figsize=SIZE)
    for i in range(len(frame)):
        row = frame.iloc[i:i + 1]
        r = row.iloc[0]
        who = r.assistant_model if r.self_play else f"{r.assistant_model} (users: {r.user_models})"
        ax.errorbar(row.accuracy, row.followup_rate, xerr=_bounds(row, "accuracy", "accuracy_lo", "accuracy_hi"),
                    yerr=_bounds(row, "followup_rate", "followup_lo", "followup_hi"), fmt=markers[r.dataset],
                    color=colours[r.assistant_model], markersize=8, capsize=3, elinewidth=1.2,
                    label=f"{who} · {r.dataset} ({r.answers} answers, {r.scored} turns)")
    ax.set_xlim(*SHARE)
    ax.set_ylim(*SHARE)
    ax.set_xlabel("task accuracy (share of answers correct, 0–1)")
    ax.set_ylabel(_FOLLOWUP_AXIS)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), title="model · dataset (bars: Wilson 95%)",
              title_fontsize=7, frameon=False)
    heading(fig, data.title)
    save_png(fig, path)


def _real_users_line(ax: plt.Axes, rows: pd.DataFrame, handles: dict, *, with_count: bool) -> None:
    """The real users' follow-up rate as a horizontal line over its Wilson band, when the panel's dataset has one."""
    if "real_users_followup_rate" not in rows or rows.real_users_followup_rate.isna().all():
        return
    real = rows.iloc[0]
    ax.axhspan(real.real_users_followup_lo, real.real_users_followup_hi, color="#000000", alpha=0.08, linewidth=0)
    ax.axhline(real.real_users_followup_rate, color="#000000", linestyle="-.", linewidth=1.2)
    label = REAL_USERS + (f" (n={int(real.real_users_scored)})" if with_count else "")
    handles[label] = Line2D([], [], color="#000000", linestyle="-.")


def draw_followup_vs_temperature(data: FigureData, path: Path) -> None:
    """Follow-up rate against user temperature, one line per user model (× mode when several) with
    Wilson error bars, lines nudged sideways a little so equal rates stay visible; one panel per dataset.
    Where the run holds human references, the real users' rate is a horizontal line (band: Wilson 95 %)."""
    frame = data.frame
    datasets = sorted(set(frame.dataset))
    modes = sorted(set(frame.user_mode))
    styles = {m: s for m, s in zip(modes, ["-", "--", ":", "-."] * len(modes))}
    colours = colour_map(frame.user_model)
    lines = sorted(set(zip(frame.user_model, frame.user_mode)))
    temperatures = sorted(set(frame.temperature))
    step = 0.06 * min((b - a for a, b in zip(temperatures, temperatures[1:])), default=1.0)
    nudge = {line: step * (i - (len(lines) - 1) / 2) for i, line in enumerate(lines)}
    fig, axes = plt.subplots(1, len(datasets), figsize=(SIZE[0] * max(1, len(datasets)) * 0.75 + 1.5, SIZE[1]),
                             sharey=True, squeeze=False)
    handles: dict[str, object] = {}
    for ax, dataset in zip(axes[0], datasets):
        mine = frame[frame.dataset == dataset]
        for (model, mode), g in mine.groupby(["user_model", "user_mode"], sort=True):
            g = g.sort_values("temperature")
            label = model if len(modes) == 1 else f"{model} · {mode}"
            if len(datasets) == 1:
                label += f" (n={int(g.scored.sum())})"
            ax.errorbar(g.temperature + nudge[(model, mode)], g.followup_rate, yerr=_bounds(g, "followup_rate", "followup_lo", "followup_hi"),
                        linestyle=styles[mode], marker="o", color=colours[model], capsize=3, elinewidth=1)
            handles[label] = Line2D([], [], color=colours[model], linestyle=styles[mode], marker="o")
        _real_users_line(ax, mine, handles, with_count=len(datasets) == 1)
        ax.set_xticks(sorted(set(mine.temperature)))
        ax.set_xlabel("user sampling temperature")
        ax.set_ylim(*SHARE)
        ax.grid(alpha=0.3)
        if len(datasets) > 1:
            ax.set_title(f"{dataset} (n={int(mine.scored.sum())} scored turns)", fontsize=9)
    axes[0][0].set_ylabel(_FOLLOWUP_AXIS)
    axes[0][-1].legend(list(handles.values()), list(handles), fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                       frameon=False, title="user model (bars: Wilson 95%)", title_fontsize=7)
    heading(fig, data.title)
    save_png(fig, path)


def _counts(ax: plt.Axes, at, tops, counts, groups: int) -> None:
    """`n=` above each bar (or bar pair), clear of its error bar."""
    for xi, top, n in zip(at, tops, counts):
        ax.text(xi, (0 if top != top else top) + 0.02, f"n={int(n) if n == n else 0}", ha="center", va="bottom",
                fontsize=7, rotation=90 if groups > 2 else 0)


def draw_perturbation_effects(data: FigureData, path: Path) -> None:
    """Left: follow-up rate on the same pairs before (unperturbed, hatched) and after (perturbed)
    per perturbation and user model; right: share of user turns that changed at all."""
    frame = data.frame
    perturbations = sorted(set(frame.perturbation))
    models = sorted(set(frame.user_model))
    colours = colour_map(models)
    width = 0.8 / (2 * len(models))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, SIZE[1]))
    x = np.arange(len(perturbations))
    for j, model in enumerate(models):
        mine = frame[frame.user_model == model].set_index("perturbation").reindex(perturbations)
        for k, (col, hatch) in enumerate([("followup_none", "//"), ("followup_perturbed", None)]):
            at = x - 0.4 + width * (2 * j + k + 0.5)
            left.bar(at, mine[col].fillna(0), width, color=colours[model], alpha=0.45 if hatch else 0.9, hatch=hatch,
                     edgecolor="white" if not hatch else colours[model],
                     yerr=_bounds(mine, col, f"{col}_lo", f"{col}_hi"), capsize=2, ecolor="#333333")
        tops = np.fmax(mine.followup_none_hi.to_numpy(float), mine.followup_perturbed_hi.to_numpy(float))
        _counts(left, x - 0.4 + width * (2 * j + 1), tops, mine.judged_pairs, len(models))
        at = x - 0.4 + (j + 0.5) * 0.8 / len(models)
        right.bar(at, mine.changed, 0.8 / len(models), color=colours[model], alpha=0.9,
                  yerr=_bounds(mine, "changed", "changed_lo", "changed_hi"), capsize=3, ecolor="#333333")
        _counts(right, at, np.fmax(mine.changed.to_numpy(float), mine.changed_hi.to_numpy(float)), mine.pairs, len(models))
    axis_labels = ((left, "follow-up rate on judged pairs (share, 0–1)"), (right, "user turns changed (share of pairs, 0–1)"))
    for ax, ylabel in axis_labels:
        ax.set_xticks(x, perturbations)
        ax.set_xlabel("perturbation of the answer")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.12)
        ax.grid(alpha=0.3, axis="y")
    left.set_title("before → after (same pairs)", fontsize=9)
    right.set_title("changed user turns", fontsize=9)
    handles = [Patch(facecolor=colours[m], label=m) for m in models]
    handles += [Patch(facecolor="#bbbbbb", hatch="//", edgecolor="#666666", label="unperturbed (before)"),
                Patch(facecolor="#666666", label="perturbed (after)")]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, -0.08), ncol=min(6, len(handles)), fontsize=8,
               frameon=False, title="user model · bars: Wilson 95%", title_fontsize=7)
    heading(fig, data.title)
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    save_png(fig, path)


def draw_failure_modes(data: FigureData, path: Path) -> None:
    """Stacked horizontal bars: share of each taxonomy label per user model (× mode), in taxonomy
    order; n in each tick label; shares of 8 % or more printed inside their segment."""
    frame = data.frame
    labels = list(taxonomy().labels)
    several = frame.user_mode.nunique() > 1
    ticks = [f"{r.user_model}{' · ' + r.user_mode if several else ''}\n(n={r.labelled})" for r in frame.itertuples()]
    fig, ax = plt.subplots(figsize=(SIZE[0], max(2.5, 1.2 + 0.55 * len(frame))))
    label_mix_bars(ax, frame, labels, ticks, "share of labelled unperturbed user turns (0–1)")
    heading(fig, data.title)
    save_png(fig, path)


def label_mix_bars(ax, frame: pd.DataFrame, labels: list[str], ticks: list[str], xlabel: str) -> None:
    """One stacked horizontal bar per row of `frame` (its `share_<label>` columns, in `labels` order, the house label
    colours), top to bottom; shares of 8 % or more printed inside their segment; the legend outside on the right."""
    y = np.arange(len(frame))
    start = np.zeros(len(frame))
    for label in labels:
        share = frame[f"share_{label}"].fillna(0).to_numpy()
        ax.barh(y, share, left=start, color=label_colour(label), edgecolor="white", linewidth=0.6,
                label=label.replace("_", " "))
        for yi, s, x0 in zip(y, share, start):
            if s >= 0.08:
                ax.text(x0 + s / 2, yi, f"{s:.0%}", ha="center", va="center", fontsize=7, color="white")
        start += share
    ax.set_yticks(y, ticks, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, title="label (taxonomy order)",
              title_fontsize=7)


def draw_survival_figure(data: FigureData, path: Path) -> None:
    """Kaplan–Meier step curves of the share of episodes still in role after k user turns, one per
    user model, censoring marked with ticks (`testbed.analysis.figures.survival_drawing`, which `graph` draws too)."""
    curves = {model: g for model, g in data.frame.groupby("user_model", sort=True)}
    draw_survival(curves, path, data.title, legend_title="user model (ticks: censored)")


def draw(data: FigureData, path: Path) -> None:
    """Draw one figure that is not skipped as a PNG at `path` (written as PNG whatever its suffix)."""
    if data.skipped is not None:
        raise ValueError(f"figure {data.name} is skipped ({data.skipped}); there is nothing to draw")
    FIGURES.entry(data.name).drawing()(data, Path(path))


def _replace(final: Path, write: Callable[[Path], None]) -> None:
    tmp = final.with_name(f".{final.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def write_figures(store: Store, run_id: str, judge: JudgeIdentity | None, out_dir: Path) -> PlotResult:
    """Write `<name>.png` and `<name>.csv` in `out_dir` for every figure of the run that can be
    drawn, each through a temporary file so no half-written file ever has the final name."""
    result = PlotResult()
    for data in figure_data(store, run_id, judge):
        if data.skipped is not None:
            result.skipped.append((data.name, data.skipped))
            continue
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        png = out_dir / f"{data.name}.png"
        _replace(out_dir / f"{data.name}.csv", lambda p, d=data: d.frame.to_csv(p, index=False))
        _replace(png, lambda p, d=data: draw(d, p))
        result.written.append(png)
    return result
