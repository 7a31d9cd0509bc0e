"""Text from outside made storable: SQLite takes valid UTF-8, and a model may send what is not.

A reply's JSON may carry a lone surrogate (`"\\ud800"` is valid JSON, and Python decodes it), which
no UTF-8 encoder accepts: the insert would raise and stop the run. Such a code point is stored as
its escape (`\\ud800`, six characters), and a NUL as `\\x00`, which SQL text functions would
otherwise cut the value at. Every other text is stored exactly as it came; the escapes are
visible, and no valid text is ever changed.
"""

from __future__ import annotations


def storable(text: str | None) -> str | None:
    """`text` with lone surrogates and NULs escaped (`\\ud800`, `\\x00`); itself when it holds none."""
    if text is None:
        return None
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
