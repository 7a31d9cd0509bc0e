"""`neutralised`: every control, bidi and zero-width character becomes a visible mark; rich's own codes survive the console."""

from __future__ import annotations

import io
import re

from rich.panel import Panel
from rich.style import Style
from rich.table import Table
from rich.text import Text

from hostile_text import FORBIDDEN, HOSTILE, MARKS, assert_neutralised
from testbed.terminal_text import NeutralConsole, neutralised, neutralised_text

SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_c0_controls_become_control_pictures_and_newlines_and_tabs_stay():
    for code in [*range(0x20), 0x7F]:
        expected = chr(code) if code in (0x09, 0x0A) else chr(0x2421 if code == 0x7F else 0x2400 + code)
        assert neutralised(f"a{chr(code)}b") == f"a{expected}b"
    assert neutralised("\x1b]0;TITLE\x07") == "␛]0;TITLE␇"


def test_crlf_is_a_newline_and_a_lone_cr_is_shown():
    assert neutralised("one\r\ntwo\rthree\r") == "one\ntwo␍three␍"


def test_c1_bidi_zero_width_and_surrogates_are_named():
    named = [*range(0x80, 0xA0), 0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F),
             0x2060, *range(0x2066, 0x206A), 0xFEFF, 0x2028, 0x2029, 0xD800, 0xDFFF, 0xE0000, 0xE0041, 0xE007F]
    for code in named:
        assert neutralised(f"a{chr(code)}b") == f"a<U+{code:04X}>b"


def test_printable_text_comes_back_unchanged():
    for text in ("plain", "", "lines\nand\ttabs", "é ü × — ↩ ◆ 你好 🙂", "<U+202E> is already a mark"):
        assert neutralised(text) is text


def test_neutralising_twice_changes_nothing_more():
    once = neutralised(HOSTILE)
    assert neutralised(once) is once
    assert_neutralised(once, marks=MARKS)


def test_a_rich_text_keeps_its_styles_on_what_they_covered():
    text = Text.assemble(("head", "bold"), " \x1b[2J\u202e ", ("tail", "red"))
    out = neutralised_text(text)
    assert out.plain == "head ␛[2J<U+202E> tail"
    assert [(out.plain[s.start:s.end], s.style) for s in out.spans] == [("head", "bold"), ("tail", "red")]
    clean = Text("clean", style="bold")
    assert neutralised_text(clean) is clean


def test_the_console_prints_marks_and_keeps_its_own_styles_and_links():
    out = io.StringIO()
    console = NeutralConsole(file=out, force_terminal=True, color_system="standard", width=100, markup=False)
    table = Table(title=HOSTILE)
    table.add_column("cell")
    table.add_row(HOSTILE)
    table.add_row(Text(HOSTILE, style="cyan"))
    console.print(table)
    console.print(Panel(Text(HOSTILE), title=Text("title " + HOSTILE)))
    console.print(Text("a link", style=Style(color="green", link="http://example.invalid/ok")))
    written = out.getvalue()
    assert SGR.search(written), "rich's colours still reach the terminal"
    assert "\x1b]8;id=" in written and "http://example.invalid/ok" in written, "rich's own link still reaches the terminal"
    shown = re.sub(r"\x1b]8;[^\x1b]*\x1b\\", "", SGR.sub("", written))
    assert not set(shown) & FORBIDDEN
    assert shown.count("␛]52;c;aGVsbG8=") >= 3 and "<U+202E>" in shown


def test_the_console_shows_what_rich_would_drop_from_a_string():
    out = io.StringIO()
    NeutralConsole(file=out, width=100, markup=False).print("bell\x07 cr\r end")
    assert out.getvalue() == "bell␇ cr␍ end\n"
