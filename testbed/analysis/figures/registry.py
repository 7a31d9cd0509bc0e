"""What a `testbed plot` figure's builder reads: the inputs every figure entry's `build` takes.

Each figure is a typed entry (testbed.specs.registries.FigureEntry: name, title, builder, drawing by
import path) declared beside its builder and registered by name in `testbed/entries.py`, in the order
the figures are built, written and listed. Whatever lists, titles, builds or draws the figures reads
these entries, so adding a figure is its builder, its entry and its drawing function plus one line in
entries.py, and no code branches on a figure's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from testbed.store.run_frames import RunFrames

if TYPE_CHECKING:
    import pandas as pd

    from testbed.store import Store
    from testbed.store.labels import JudgeIdentity


@dataclass(frozen=True)
class FigureInputs:
    """What every builder may read, loaded once per run: the run, the judge, its finished user turns and episodes, and
    the run's `RunFrames` for anything else it needs."""

    store: Store
    run_id: str
    judge: JudgeIdentity | None
    turns: pd.DataFrame
    """`testbed.analysis.figures.data.finished_turns` (empty when the judge labelled none of the run's turns)."""
    episodes: pd.DataFrame
    """Every episode of the run (`testbed.store.frames.episodes_df`)."""
    run: RunFrames | None = None
    """The run's frames under `judge`, read once for every figure; built from the fields above when not given."""

    def __post_init__(self) -> None:
        if self.run is None:
            object.__setattr__(self, "run", RunFrames(self.store, self.run_id, self.judge))
