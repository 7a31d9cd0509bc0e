"""A long message shown in part: its first few thousand characters, its last few hundred, and how much lies between.

An agent may reply with megabytes (a python agent returning a 10 MB string, a server's runaway
generation), and laying such a text out (rich wraps and crops every line, textual measures every
cell) costs seconds per megabyte. Every view therefore cuts a long text *before* it is neutralised,
wrapped or measured, and says what it left out and how to see it whole (`--full` in the print commands,
a key or a click in the replay app). Short texts, the common case, are shown exactly as before.

A cut never splits a CRLF (a lone CR would be drawn as `␍`) or a surrogate pair, and the kept parts
are still neutralised by the view like any other text, so a cut through an escape sequence shows its
remaining characters as visible marks and never lets a control character through.

A text shown whole (`--full`, or expanded in the app) is laid out in `pieces`: rich splits one text's
lines by copying the rest of it at every line, which costs the square of its length (minutes for 10 MB).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from testbed.terminal_text import neutralised

GAP_STYLE = "reverse dim"
"""How the note standing for the left-out middle of a text is drawn: plainly not part of the text."""
HEAD_CHARS = 4_000
"""Characters of a long text shown from its start."""
TAIL_CHARS = 400
"""Characters of a long text shown from its end, after the gap."""
LONG_CHARS = 8_000
"""A text longer than this is shown in part; one of this length or shorter is shown whole."""
PIECE_CHARS = 16_000
"""Longest piece a text shown whole is laid out in (see `pieces`)."""


EXPAND_FACTOR = 10
"""How many times more of a cut text the replay app shows each time it is asked for more."""


def leaves_out(longest: int, head: int | None) -> bool:
    """Whether showing `head` characters (None: whole) of a text of `longest` characters leaves part of it out."""
    return head is not None and longest > max(LONG_CHARS, head + TAIL_CHARS, 2 * head)


def larger_part(longest: int, head: int | None) -> int | None:
    """What to show next of a cut text of `longest` characters: `EXPAND_FACTOR` times `head` characters, or None (whole)
    when that would leave nothing out."""
    larger = head * EXPAND_FACTOR if head is not None else None
    return larger if leaves_out(longest, larger) else None


@dataclass(frozen=True)
class TextPart:
    """What of a text a view shows: its start, its end, and how much was left out between them."""

    head: str
    """The text's first characters (the whole text when nothing was left out)."""
    tail: str
    """Its last characters, shown after the gap ("" when nothing was left out)."""
    left_out: int
    """Characters between head and tail that are not shown (0 when the text is shown whole)."""
    total_chars: int
    """Characters of the whole text."""
    total_bytes: int
    """Its size in UTF-8 bytes (what a wire log or a store holds)."""

    @property
    def cut(self) -> bool:
        """Whether part of the text is left out."""
        return self.left_out > 0

    def gap_note(self, hint: str) -> str:
        """The line the gap is shown as: `… 9,995,600 characters left out (10,000,000 in all, 9.5 MB); HINT …`."""
        return (f"… {self.left_out:,} characters left out ({self.total_chars:,} in all, {size_words(self.total_bytes)}); "
                f"{hint} …")


def size_words(size: int) -> str:
    """A byte count in words: `812 bytes`, `37.5 KB`, `9.5 MB` (powers of 1,024, as `ls -h` counts)."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _safe_end(text: str, at: int) -> int:
    """`at` moved back so that `text[:at]` ends neither inside a CRLF nor between the halves of a surrogate pair."""
    if 0 < at < len(text) and (text[at - 1] == "\r" and text[at] == "\n" or "\ud800" <= text[at - 1] <= "\udbff"):
        return at - 1
    return at


def _safe_start(text: str, at: int) -> int:
    """`at` moved on so that `text[at:]` starts neither inside a CRLF nor between the halves of a surrogate pair."""
    if 0 < at < len(text) and (text[at - 1] == "\r" and text[at] == "\n" or "\udc00" <= text[at] <= "\udfff"):
        return at + 1
    return at


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8, lone surrogates counted as the three bytes they would take."""
    return len(text.encode("utf-8", "surrogatepass"))


def text_part(text: str, *, head: int = HEAD_CHARS, tail: int = TAIL_CHARS, longest: int = LONG_CHARS) -> TextPart:
    """The part of `text` a view shows: all of it up to `longest` characters, else its first `head` and last `tail`.

    Costs one pass over the text (its UTF-8 size) when it is long, and nothing more, so a view can call it on a
    text of any size before the expensive passes.
    """
    if len(text) <= max(longest, head + tail):
        return TextPart(text, "", 0, len(text), utf8_size(text))
    end = _safe_end(text, head)
    start = _safe_start(text, len(text) - tail) if tail else len(text)
    return TextPart(text[:end], text[start:], start - end, len(text), utf8_size(text))


def shown_text(text: str, hint: str, *, head: int = HEAD_CHARS, tail: int = TAIL_CHARS, longest: int = LONG_CHARS) -> str:
    """`text` as a view that cannot style its gap shows it: whole when short, else head, the gap's note on a line of its own,
    and tail."""
    part = text_part(text, head=head, tail=tail, longest=longest)
    if not part.cut:
        return text
    return f"{part.head}\n{part.gap_note(hint)}\n{part.tail}"


def text_in_part(text: str, hint: str, *, head: int | None = HEAD_CHARS, style: str = "") -> Text:
    """`text` neutralised as a rich `Text` in `style`: whole when `head` is None or the text is short, else its first
    `head` characters, the gap's note (`hint` says how to see the rest) and its last `TAIL_CHARS`."""
    if head is None:
        return Text(neutralised(text), style=style)
    part = text_part(text, head=head, longest=max(LONG_CHARS, head + TAIL_CHARS, 2 * head))
    shown = Text(neutralised(part.head), style=style)
    if part.cut:
        shown.append("\n")
        shown.append(part.gap_note(hint), style=GAP_STYLE)
        shown.append("\n")
        shown.append(neutralised(part.tail), style=style)
    return shown


def pieces(text: Text, size: int = PIECE_CHARS) -> list[Text]:
    """`text` as consecutive pieces of at most `size` characters, each ending where a line does (the newline between two
    pieces dropped, since each starts a line of its own), so that laying them out costs time in proportion to the text;
    a line longer than `size` is broken where the piece ends. `[text]` itself when it is short."""
    plain = text.plain
    if len(plain) <= size:
        return [text]
    offsets, start = [], 0
    while len(plain) - start > size:
        newline = plain.rfind("\n", start, start + size)
        end = newline if newline > start else start + size
        offsets.append(end)
        start = end + (plain[end] == "\n")
    out = text.divide(offsets)
    return [out[0], *(p[1:] if p.plain.startswith("\n") else p for p in out[1:])]


def text_blocks(text: str, hint: str, *, head: int | None = HEAD_CHARS, style: str = "") -> list[Text]:
    """`text_in_part` in `pieces`: what a panel or a table cell holds for a message of any size."""
    return pieces(text_in_part(text, hint, head=head, style=style))
