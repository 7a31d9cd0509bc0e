"""The look `testbed plot`'s figures share (size, resolution, share axes, titles, colours), and how a figure is saved.

Kept apart from the drawings so a picture drawn for another command (the survival curves of
`testbed graph`) is styled and saved exactly as the `plot` figure of the same numbers.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

SIZE = (7.0, 4.5)
"""A single-panel figure's size in inches."""
DPI = 150
SHARE = (-0.03, 1.03)
"""The limits of every 0–1 share axis: a little room past 0 and 1, so a curve or bar at either end stays visible."""


def colour_map(names: Iterable[str]) -> dict:
    """Each distinct name's colour from the default cycle, by sorted order, so a name keeps its colour across panels."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(sorted(set(names)))}


def heading(fig: plt.Figure, title: str) -> None:
    """The figure's title, wrapped to its width, at the top left, standing on the figure's top edge so that a title
    of several lines (a long judge identity) never runs into the axes; `save_png`'s tight box takes it in."""
    width = int(13 * fig.get_figwidth())
    fig.suptitle("\n".join(textwrap.wrap(title, width)), fontsize=10, x=0.01, y=1.0, ha="left", va="bottom")


def save_png(fig: plt.Figure, path: Path) -> None:
    """Write the figure as PNG (whatever the suffix: `plot` writes through a temporary name) on white, and close it."""
    fig.savefig(path, format="png", dpi=DPI, bbox_inches="tight", facecolor="white")
    plt.close(fig)
