"""The one check on user-supplied names and labels: a reviewer, an annotator, a run id, a judge named on the command
line. Longer than `testbed.limits.MAX_LABEL_CHARS` is refused with one line naming the option and the limit, before
anything is written, so a 100 KB name is never stored, put into an identity or echoed back whole."""

from __future__ import annotations

from pathlib import Path

from testbed.limits import MAX_LABEL_CHARS

SHOWN_CHARS = 40
"""How much of a refused name the message shows, so the user can tell which value it was."""


class LabelTooLong(ValueError):
    """A name or label longer than MAX_LABEL_CHARS: the one-line message names the option and the limit."""


def checked_label(value: str, option: str) -> str:
    """`value`, when it is at most MAX_LABEL_CHARS characters; else LabelTooLong naming `option` (e.g. `--run-id`)."""
    if len(value) > MAX_LABEL_CHARS:
        raise LabelTooLong(f"{option} is {len(value):,} characters long (it starts {value[:SHOWN_CHARS]!r}); names and labels "
                           f"are limited to {MAX_LABEL_CHARS} characters: give a shorter one")
    return value


def checked_judge(value: str, option: str) -> str:
    """A judge or annotator as named on the command line (`learned`, `name:model`, `human:NAME`): checked like any
    name, except the path of an existing spec file, whose length is the file system's business."""
    try:
        if Path(value).is_file():
            return value
    except (OSError, ValueError):
        pass
    return checked_label(value, option)
