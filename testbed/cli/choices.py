"""What the CLI's judge and framework options accept, read from the registries and the built-in judge specs.

Each option's help is built from `FRAMEWORKS`, `JUDGE_KINDS` and `judges/*.yaml` when the command line is
built, so `--help` lists what exists (a framework registered by a plug-in, a judge spec added to the folder)
instead of a list written once and left behind.
"""

from __future__ import annotations

from testbed.specs.registries import FRAMEWORKS, JUDGE_KINDS, default_framework
from testbed.store.labels import DEFAULT_JUDGE


def framework_names(separator: str = " | ") -> str:
    """The registered frameworks, the baseline first (`native | autogen | ...`)."""
    return separator.join(FRAMEWORKS.names())


def framework_help(what: str) -> str:
    """An option's help naming every framework: `what`, then the names and the default."""
    return f"{what}: {framework_names()} (default {default_framework()})"


def judge_names(*, prompted: bool | None = None) -> list[str]:
    """The built-in judges (`testbed.judges.builtin.builtin_judges`), the default judge first where it is one of them."""
    from testbed.judges.builtin import builtin_judges

    names = list(builtin_judges(prompted=prompted))
    return sorted(names, key=lambda name: name != DEFAULT_JUDGE)


def judge_help(what: str, *, prompted: bool | None = None) -> str:
    """An option's help naming every built-in judge (only the prompted ones with `prompted=True`) and the judge kinds
    a spec path may declare."""
    from testbed.judges.builtin import kind_is_prompted

    kinds = [k for k in JUDGE_KINDS.names() if prompted is None or kind_is_prompted(k) == prompted]
    return f"{what}: {' | '.join(judge_names(prompted=prompted))} | a judge spec path (kind {' | '.join(kinds)})"
