"""A `testbed plot` figure as one typed entry (name, title, how its numbers are built, how it is drawn), and their registry.

Each figure is declared once, by a decorator on its builder in `testbed.analysis.figures.data`; the
drawing is named by import path, so building the numbers never imports matplotlib. Whatever lists,
titles, builds or draws the figures reads these entries, so adding a figure is its builder with
one decorator and its drawing function, and no code branches on a figure's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from testbed.registry import Ref, Registry

if TYPE_CHECKING:
    import pandas as pd

    from testbed.store import Store
    from testbed.store.labels import JudgeIdentity

@dataclass(frozen=True)
class FigureInputs:
    """What every builder may read, loaded once per run: the run, the judge, its finished user turns and episodes."""

    store: Store
    run_id: str
    judge: JudgeIdentity | None
    turns: pd.DataFrame
    """`testbed.analysis.figures.data.finished_turns` (empty when the judge labelled none of the run's turns)."""
    episodes: pd.DataFrame
    """Every episode of the run (`testbed.store.frames.episodes_df`)."""


@dataclass(frozen=True)
class Figure:
    """One figure: `name` is the stem of its PNG and CSV, `title` the head of its title, `build` its numbers
    (frame, skip reason) from the run's inputs, `draw` the function `(FigureData, path) -> None` that draws it;
    `needs_labels` False for a figure drawn without a judge's labels (it is skipped only by its own reason)."""

    name: str
    title: str
    build: Callable[[FigureInputs], tuple[pd.DataFrame, str | None]]
    draw: Ref
    needs_labels: bool = True

    def drawing(self) -> Callable:
        """The drawing function, imported on first use (it needs matplotlib)."""
        return self.draw.load()


class FigureRegistry(Registry[Figure]):
    """The figures in declaration order, which is the order they are built, written and listed."""

    def __init__(self) -> None:
        super().__init__("figure", Figure)

    def figure(self, name: str, title: str, *, draw: str, needs_labels: bool = True) -> Callable:
        """Decorator declaring the decorated builder's figure; a name declared twice is an error."""

        def declare(build: Callable) -> Callable:
            if name in self:
                raise ValueError(f"figure {name!r} is already declared")
            self.add(Figure(name, title, build, Ref(draw), needs_labels))
            return build

        return declare
