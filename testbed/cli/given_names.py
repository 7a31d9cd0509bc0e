"""Names and labels given on the command line, checked before a command does anything (testbed.label_limits)."""

from __future__ import annotations

from testbed.cli.shell import fail
from testbed.label_limits import LabelTooLong, checked_judge, checked_label


def given_name(value: str | None, option: str) -> str | None:
    """`value` (None passes), or exit 2 with the one-line reason when it is longer than names may be."""
    try:
        return checked_label(value, option) if value is not None else None
    except LabelTooLong as exc:
        fail(str(exc))


def given_judge(value: str | None, option: str) -> str | None:
    """A judge or annotator named by an option (a judge spec file's path passes whatever its length), checked like
    `given_name`."""
    try:
        return checked_judge(value, option) if value is not None else None
    except LabelTooLong as exc:
        fail(str(exc))
