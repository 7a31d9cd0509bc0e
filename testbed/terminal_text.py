"""Text that a model, a server, a dataset or a file wrote, made safe to show on a terminal.

A reply holding `\\x1b]0;TITLE\\x07` would retitle the window, `\\x1b]52;c;…\\x07` would write the
clipboard, `\\x1b[2J` would clear the screen, and a bidi override would make a line read differently
from what it holds. Every view shows such text through `neutralised`, which makes each of those
characters a visible mark instead: C0 controls (ESC, BEL, NUL, a lone CR, DEL…) become their Unicode
Control Pictures (`␛`, `␇`, `␀`, `␍`, `␡`); C1 controls, bidi embeddings, overrides, isolates and marks,
zero-width characters, line/paragraph separators, Unicode tag characters (invisible
text) and lone surrogates become `<U+XXXX>`. Newlines and tabs stay, and CRLF becomes
a newline. The store keeps the raw text; only what is shown is neutralised.

`neutralised_text` does the same to a rich `Text`, keeping its styles on the characters they covered,
and `NeutralConsole` applies both to everything a rich console prints (`testbed.cli.shell`'s consoles).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Span, Text

_PICTURED = [*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F]
_MARKED = [
    *range(0x80, 0xA0),
    0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
    *range(0x200B, 0x200E), 0x2060, 0xFEFF, 0x2028, 0x2029,
    *range(0xD800, 0xE000), *range(0xE0000, 0xE0080),
]

_TABLE: dict[int, str] = {c: chr(0x2421 if c == 0x7F else 0x2400 + c) for c in _PICTURED}
_TABLE.update({c: f"<U+{c:04X}>" for c in _MARKED})

_UNSAFE = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060\u2066-\u2069\ufeff\ud800-\udfff\U000e0000-\U000e007f]")
"""One thing `neutralised` changes: a CRLF pair, or one character of `_TABLE`."""


def neutralised(text: str) -> str:
    """`text` with every control character, bidi control, zero-width character and lone surrogate made a
    visible mark (see the module docstring); `text` itself when it holds none, which is the common case."""
    if text.isprintable() or _UNSAFE.search(text) is None:
        return text
    return text.replace("\r\n", "\n").translate(_TABLE)


def neutralised_text(text: Text) -> Text:
    """A rich `Text` neutralised like `neutralised`, each span moved to cover what its characters became;
    `text` itself when there is nothing to change."""
    plain = text.plain
    if plain.isprintable():
        return text
    matches = list(_UNSAFE.finditer(plain))
    if not matches:
        return text
    pieces, olds, shifts, at, shift = [], [0], [0], 0, 0
    for m in matches:
        replacement = neutralised(m.group())
        pieces += [plain[at:m.start()], replacement]
        shift += len(replacement) - (m.end() - m.start())
        olds.append(m.end())
        shifts.append(shift)
        at = m.end()
    pieces.append(plain[at:])

    def moved(offset: int) -> int:
        return offset + shifts[bisect_right(olds, offset) - 1]

    out = text.blank_copy("".join(pieces))
    out.spans = [Span(moved(s.start), moved(s.end), s.style) for s in text.spans]
    return out


class NeutralConsole(Console):
    """A rich Console that neutralises all the text it prints, whoever built the renderable.

    Strings (a table cell, a printed line) are neutralised before they become `Text`, so a BEL or CR
    shows as `␇`/`␍` rather than being dropped; every `Text` is neutralised before it is laid out, so
    widths and borders stay right; and the text of every segment it yields is checked once more, for
    renderables that make segments themselves. Rich's own codes (colours, links, cursor moves) come
    from styles and control segments, never from segment text, so they pass unchanged.
    """

    def render_str(self, text: str, **kwargs) -> Text:
        """The string neutralised, then made `Text` as rich does."""
        return super().render_str(neutralised(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """Rich's rendering, with `Text` neutralised before layout and every text segment after it."""
        if isinstance(renderable, Text):
            renderable = neutralised_text(renderable)
        for segment in super().render(renderable, options):
            if segment.control is None and not segment.text.isprintable() and _UNSAFE.search(segment.text):
                segment = Segment(neutralised(segment.text), segment.style)
            yield segment
