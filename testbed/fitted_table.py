"""Tables that fit where they land: a rich table when the width gives every column room, else one card per row.

Rich squeezes a table wider than the terminal (or a pipe's 80 columns, or `COLUMNS`) by cutting every
column down, until headers and numbers are one-character slivers. A `FittedTable` decides at print
time, from the width it is given: the table as it is when it fits; the table with each column at least
as wide as its longest word (and each value on at most `MOST_LINES` lines) when that fits; and
otherwise a card per row, the row's key columns as its title line and `header: value` lines below,
so every number keeps its interval and every header stays whole. Every table the command line prints
is one, so `testbed report`, `compare`, `runs` and the rest read the same way at any width.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from testbed.terminal_text import neutralised

if TYPE_CHECKING:
    import pandas as pd

MOST_LINES = 3
"""A value may wrap onto this many lines in a table; a table that cannot give it that much room becomes cards."""
FOLDED_MIN = 12
"""The narrowest a column of free text that may be broken anywhere (`fold=True`: a message, a body) is drawn."""
CARD_INDENT = 2
"""How far a card's `header: value` lines sit under its title."""


@dataclass
class FitColumn:
    """One column: its header, how its values align, and how they may break (`no_wrap`: never, e.g. an id;
    `fold`: anywhere, e.g. a message's text; otherwise between words)."""

    header: str
    justify: str = "left"
    no_wrap: bool = False
    fold: bool = False


class FittedTable:
    """A table that prints as a rich `Table` where the width allows and as one card per row where it does not.

    `key` leading columns name a row (a condition, a framework, a run id): they lead every table row and
    make each card's title line. Cells are strings or rich renderables; `title` and `caption` may be set
    after it is built, like a rich table's. A `plain` table has no borders: columns apart by spaces, like
    pandas prints a frame, for figures a reader copies or a script splits on whitespace. A `compact` table
    folds each row into a few lines of `header: value` pairs instead of a card with a line per column: for a
    list of many short rows (the runs in a store), where a card per row would run to pages.
    """

    def __init__(self, columns: Iterable[FitColumn | str], rows: Iterable[Sequence[RenderableType]] = (), *,
                 title: str | None = None, caption: str | None = None, key: int = 1, show_lines: bool = False,
                 plain: bool = False, compact: bool = False):
        self.columns = [c if isinstance(c, FitColumn) else FitColumn(c) for c in columns]
        self.rows: list[list[RenderableType]] = []
        self.title, self.caption, self.key, self.show_lines, self.plain = title, caption, key, show_lines, plain
        self.compact = compact
        for row in rows:
            self.add_row(*row)

    def add_row(self, *cells: RenderableType) -> None:
        """Append a row; it must have a cell per column."""
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for a table of {len(self.columns)} columns")
        self.rows.append(list(cells))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.column_widths(console, options)
        if widths is None:
            yield from self.cards(console, options.max_width)
        else:
            yield self.as_table(widths)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(options.max_width, 20), options.max_width)

    def column_widths(self, console: Console, options: ConsoleOptions) -> list[int | None] | None:
        """Each column's width in a table that fits `options.max_width` (None: rich's own width, the table fits as it
        is), or None when no table fits and the rows become cards."""
        ranges = [self._measure(console, options, i) for i in range(len(self.columns))]
        frame = 2 * len(self.columns) if self.plain else 3 * len(self.columns) + 1
        room = options.max_width - frame
        if sum(high for _, high in ranges) <= room:
            return [None] * len(self.columns)
        lows = [low for low, _ in ranges]
        if sum(lows) > room:
            return None
        spare = room - sum(lows)
        wants = [high - low for low, high in ranges]
        shares = [spare * want // max(sum(wants), 1) for want in wants]
        return [low + share for low, share in zip(lows, shares)]

    def _measure(self, console: Console, options: ConsoleOptions, index: int) -> tuple[int, int]:
        """The narrowest a column reads well at, and its natural width, without padding."""
        column = self.columns[index]
        low, high = _longest_word(column.header), cell_len(column.header)
        for row in self.rows:
            cell = row[index]
            if isinstance(cell, str):
                shown = neutralised(cell)
                lines = shown.splitlines() or [""]
                widest = max(cell_len(line) for line in lines)
                need = widest if column.no_wrap else max(_longest_word(shown), math.ceil(widest / MOST_LINES))
            else:
                measured = Measurement.get(console, options, cell)
                widest, need = measured.maximum, measured.minimum
            low, high = max(low, FOLDED_MIN if column.fold else need), max(high, widest)
        return min(low, high), high

    def as_table(self, widths: Sequence[int | None]) -> Table:
        """The rows as a rich table, each column `widths` wide (None: as wide as rich makes it)."""
        table = Table(title=self.title, caption=self.caption, show_lines=self.show_lines, box=None if self.plain else box.HEAVY_HEAD)
        for column, width in zip(self.columns, widths):
            table.add_column(column.header, justify=column.justify, no_wrap=column.no_wrap, width=width,
                             overflow="fold" if column.fold else "ellipsis")
        for row in self.rows:
            table.add_row(*row)
        return table

    def cards(self, console: Console, width: int) -> Iterable[RenderableType]:
        """The title, one card per row (its key columns as a title line, then `header: value` for each other
        non-empty cell, a long value wrapped under itself), and the caption, each line within `width`."""
        if self.title:
            yield Text(self.title, style="bold italic")
        for row in self.rows:
            if self.compact:
                yield from self._compact_lines(console, row, width)
                continue
            yield Text("")
            if self.key:
                yield Text(neutralised(self.card_title(row)), style="bold")
            yield from self._card_lines(console, row, width - CARD_INDENT)
        if self.caption:
            yield Text("")
            yield Text(self.caption, style="dim")

    def card_title(self, row: Sequence[RenderableType]) -> str:
        """`header: value` for each key column that holds something, side by side."""
        named = zip(self.columns[:self.key], row[:self.key])
        return "  ".join(f"{c.header}: {v}" for c, v in named if isinstance(v, str) and v)

    def as_markdown(self) -> str:
        """The table in GitHub-flavoured Markdown under a `### title` heading, every cell neutralised with its `|`
        escaped, for a paper draft or an issue (a cell that is not text shows as its plain text)."""
        def cell(value: RenderableType) -> str:
            text = value if isinstance(value, str) else value.plain if isinstance(value, Text) else str(value)
            return neutralised(text).replace("|", "\\|").replace("\n", " ")

        lines = [f"### {neutralised(self.title)}", ""] if self.title else []
        lines += ["| " + " | ".join(cell(c.header) for c in self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        return "\n".join(lines)

    def _compact_lines(self, console: Console, row: Sequence[RenderableType], width: int) -> Iterable[Text]:
        """A row as its title (`card_title`) in bold, then `header: value` pairs, filled into lines of `width` under a hanging
        indent; a pair moves to the next line whole rather than break (one longer than a line wraps alone)."""
        pairs = [Text(neutralised(self.card_title(row)), style="bold")]
        pairs += [Text.assemble((f"{neutralised(c.header)}: ", "dim"), neutralised(v))
                  for c, v in zip(self.columns[self.key:], row[self.key:]) if isinstance(v, str) and v.strip()]
        line, room = Text(), width
        for pair in (p for p in pairs if p):
            gap = 2 if line else 0
            if line and cell_len(pair.plain) + gap > room:
                yield line
                line, room, gap = Text(" " * CARD_INDENT), width - CARD_INDENT, 0
            if cell_len(pair.plain) + gap > room:
                parts = pair.wrap(console, max(room - gap, 8), overflow="fold")
                line.append_text(Text(" " * gap).append_text(parts[0]))
                for part in list(parts)[1:]:
                    yield line
                    line = Text(" " * CARD_INDENT).append_text(part)
                room = width - cell_len(line.plain)
                continue
            line.append_text(Text(" " * gap).append_text(pair))
            room -= cell_len(pair.plain) + gap
        if line:
            yield line

    def _card_lines(self, console: Console, row: Sequence[RenderableType], width: int) -> Iterable[RenderableType]:
        """A card's `header: value` lines, indented by CARD_INDENT: labels padded to one width (at most half the
        card's), each value wrapped beside its label; a label too long for that column, or a value that is not
        text, sits on its own line with the value under it."""
        shown = [(c, v) for c, v in zip(self.columns[self.key:], row[self.key:]) if not (isinstance(v, str) and not v.strip())]
        label_width = min(max((cell_len(c.header) + 1 for c, _ in shown), default=0), max(width // 2, 8))
        indent = " " * CARD_INDENT
        for column, value in shown:
            label = f"{column.header}:"
            beside = isinstance(value, str) and cell_len(label) <= label_width
            if not beside:
                yield Text(indent + label, style="dim")
                if not isinstance(value, str):
                    yield Padding(value, (0, 0, 0, CARD_INDENT + label_width + 1), expand=False)
                    continue
            lines = Text(neutralised(value)).wrap(console, max(width - label_width - 1, 8), overflow="fold")
            for k, line in enumerate(lines):
                lead = indent + (label.ljust(label_width) if k == 0 and beside else " " * label_width) + " "
                yield Text.assemble((lead, "dim"), line.rstrip() or line)


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def frame_table(frame: pd.DataFrame, *, float_format: str = "{:.2f}", index: bool = False, key: int = 0, plain: bool = True,
                title: str | None = None) -> FittedTable:
    """A data frame as a fitted table (plain by default, as pandas prints it): numbers right-aligned, floats in
    `float_format` (NaN as `NaN`), the index as the first column when `index`; the first `key` columns (the index,
    when shown) name each card where the table is folded."""
    import pandas as pd

    shown = frame.reset_index() if index else frame
    numeric = {c for c in shown.columns if pd.api.types.is_numeric_dtype(shown[c]) and not pd.api.types.is_bool_dtype(shown[c])}

    def cell(value) -> str:
        if isinstance(value, float):
            return "NaN" if value != value else float_format.format(value)
        return str(value)

    columns = [FitColumn(str(c), justify="right" if c in numeric else "left") for c in shown.columns]
    rows = [[cell(v) for v in row] for row in shown.itertuples(index=False)]
    return FittedTable(columns, rows, title=title, key=max(key, 1) if index else key, plain=plain)
