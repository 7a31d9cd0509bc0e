"""The episode table's filter: one line of `field=value` terms, flags and free text, parsed once.

    model=smol t=0.7 label=echo drifted !errored gsm8k

keeps episodes whose assistant or user model contains "smol", at temperature 0.7, that a judge
labelled `echo_assistant` at least once, that drifted and did not fail, and whose transcript
contains "gsm8k". Every term must hold. Values match case-insensitively as substrings, except the
temperature (a number) and the yes/no flags. An unknown field is a `FilterError` naming the known ones.

On a run whose kind detects simulated-user faults, `fault=invented` keeps episodes with a fault whose kind contains
the value (a short name the faults column shows, such as τ²'s `premature` or `invented`, or a kind's full name; a
value that is part of no kind any registered scenario kind detects fails when the line is read), and the flag `faulted` (`!faulted`) keeps those with some fault
(with none). The flags are `drifted`, `errored` and `faulted`; `!` before one negates it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from testbed.replay.catalog import EpisodeRow, known_fault_names


class FilterError(ValueError):
    """A filter line that cannot be read; the message names the term and what would work."""


def _text(getter: Callable[[EpisodeRow], str]) -> Callable[[EpisodeRow, str], bool]:
    return lambda row, value: value in getter(row).lower()


def _temperature(row: EpisodeRow, value: str) -> bool:
    try:
        return abs(row.temperature - float(value)) < 1e-9
    except ValueError:
        raise FilterError(f"t={value!r} is not a number; write e.g. t=0.7") from None


def _flag(getter: Callable[[EpisodeRow], bool]) -> Callable[[EpisodeRow, str], bool]:
    def match(row: EpisodeRow, value: str) -> bool:
        if value not in YES and value not in NO:
            raise FilterError(f"{value!r} is not yes or no")
        return getter(row) == (value in YES)
    return match


def _fault(row: EpisodeRow, value: str) -> bool:
    known = known_fault_names()
    if not any(value in kind for kind in known):
        raise FilterError(f"fault={value!r} is part of no fault kind; kinds: {', '.join(known)}")
    return any(value in kind for kind in row.faults)


YES, NO = frozenset({"yes", "y", "true", "1"}), frozenset({"no", "n", "false", "0"})

FIELDS: dict[str, Callable[[EpisodeRow, str], bool]] = {
    "id": _text(lambda r: r.episode_id),
    "item": _text(lambda r: r.item_id),
    "model": lambda r, v: v in r.assistant_model.lower() or v in r.user_model.lower(),
    "assistant": _text(lambda r: r.assistant_model),
    "user": _text(lambda r: r.user_model),
    "dataset": _text(lambda r: r.dataset),
    "mode": _text(lambda r: r.user_mode),
    "t": _temperature,
    "perturbation": _text(lambda r: r.perturbation),
    "framework": _text(lambda r: r.framework),
    "stop": _text(lambda r: r.termination),
    "error": _text(lambda r: r.error),
    "top": _text(lambda r: r.top_label),
    "label": lambda r, v: any(v in label for label in r.labels),
    "fault": _fault,
    "drifted": _flag(lambda r: r.drifted),
    "errored": _flag(lambda r: r.errored),
    "faulted": _flag(lambda r: r.faulted),
}
"""Every field a term can name, and how a row matches a (lower-cased) value."""

FLAGS = ("drifted", "errored", "faulted")
"""The yes/no fields a term can name bare (`drifted`) or negated (`!drifted`)."""

ALIASES = {"temperature": "t", "pert": "perturbation", "termination": "stop", "status": "errored", "faults": "fault"}

def filter_help(fault_names: Mapping[str, str]) -> str:
    """What a filter line can say, for the help screen of a run whose kind detects the faults `fault_names` names
    (kind → short name; empty for a kind that detects none)."""
    kinds = f"fault kinds: {', '.join(fault_names.values())}\n" if fault_names else ""
    return (f"fields (field=value; a part of the text is enough, t is a number): "
            f"{', '.join(f for f in FIELDS if f not in FLAGS)}\n"
            f"flags (! negates): {', '.join(FLAGS)}\n"
            f"{kinds}any other word: episodes whose transcript contains it")


@dataclass(frozen=True)
class EpisodeFilter:
    """A parsed filter line: field terms, and free words every kept transcript must contain."""

    terms: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()
    text: str = ""

    @classmethod
    def parse(cls, line: str) -> "EpisodeFilter":
        """Read a filter line; FilterError names the first term that cannot be read."""
        try:
            parts = shlex.split(line)
        except ValueError as exc:
            raise FilterError(f"{exc}: close the quote") from None
        terms, words = [], []
        for part in parts:
            negated = part.startswith("!")
            name, eq, value = part.lstrip("!").partition("=")
            name = ALIASES.get(name.lower(), name.lower())
            if not eq and name in FLAGS:
                terms.append((name, "no" if negated else "yes"))
            elif eq:
                if name not in FIELDS:
                    raise FilterError(f"unknown filter field {name!r}; fields: {', '.join(FIELDS)} "
                                      f"(or a flag alone: {', '.join(FLAGS)}, ! negates; or free text)")
                if not value:
                    raise FilterError(f"{part!r} has no value; write {name}=VALUE")
                terms.append((name, value.lower()))
            else:
                words.append(part)
        parsed = cls(tuple(terms), tuple(words), line.strip())
        parsed.keeps(_PROBE)
        return parsed

    def keeps(self, row: EpisodeRow) -> bool:
        """Whether the row passes every field term (free words are checked against transcripts by the caller)."""
        return all(FIELDS[name](row, value) for name, value in self.terms)

    def apply(self, rows: list[EpisodeRow], containing: Callable[[str], set[str]]) -> list[EpisodeRow]:
        """The rows that pass; `containing(word)` gives the episodes whose transcript contains a word."""
        kept = [r for r in rows if self.keeps(r)]
        for word in self.words:
            ids = containing(word)
            kept = [r for r in kept if r.episode_id in ids]
        return kept


_PROBE = EpisodeRow("", "", "", "", "", "", 0.0, "", "", "done", "", "", 0, None, None, "", frozenset())
"""A row every term can be tried on, so a bad value (t=abc, drifted=maybe, fault=colour) fails when the line is parsed."""


_MISSING = (None, "", ())


@dataclass
class SortState:
    """Which column the table is sorted by and in which direction; sorting the same column again reverses it."""

    column: str | None = None
    reverse: bool = False

    def apply(self, rows: list[EpisodeRow]) -> list[EpisodeRow]:
        """The rows in this order; rows missing the value (no onset, no label, no error, no fault) go last either way."""
        if self.column is None:
            return rows
        column = self.column
        present = [r for r in rows if getattr(r, column) not in _MISSING]
        missing = [r for r in rows if getattr(r, column) in _MISSING]
        return sorted(present, key=lambda r: getattr(r, column), reverse=self.reverse) + missing

    def toggle(self, column: str) -> None:
        """Sort by `column`, or reverse the order when it already is."""
        self.reverse = not self.reverse if column == self.column else False
        self.column = column
