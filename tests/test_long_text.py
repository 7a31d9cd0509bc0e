"""A long text shown in part: start, size, end; short texts untouched; a cut never lets a control character through."""

from __future__ import annotations

import io

from rich.console import Console

from hostile_text import FORBIDDEN, HOSTILE
from rich.console import Group
from rich.text import Text

from testbed.long_text import HEAD_CHARS, LONG_CHARS, TAIL_CHARS, pieces, shown_text, size_words, text_in_part, text_part
from testbed.replay.tool_render import compact_arguments, result_body
from testbed.transcript import Message, ToolResult


def printed(text) -> str:
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(text)
    return console.export_text()


def test_a_text_up_to_the_limit_is_shown_whole_and_unchanged():
    text = "a" * LONG_CHARS
    part = text_part(text)
    assert not part.cut and part.head is text and shown_text(text, "hint") is text


def test_a_long_text_keeps_its_start_and_end_and_names_its_size():
    text = "é" * 5_000_000 + "THE-END"
    part = text_part(text)
    assert part.cut and len(part.head) == HEAD_CHARS and part.tail.endswith("THE-END") and len(part.tail) == TAIL_CHARS
    assert part.left_out == len(text) - HEAD_CHARS - TAIL_CHARS and part.total_bytes == 10_000_007
    shown = shown_text(text, "--full shows it whole")
    assert len(shown) < HEAD_CHARS + TAIL_CHARS + 200
    assert f"… {len(text) - HEAD_CHARS - TAIL_CHARS:,} characters left out (5,000,007 in all, 9.5 MB); --full shows it whole …" in shown


def test_sizes_read_as_ls_h_does():
    assert [size_words(n) for n in (812, 38_400, 10_000_000)] == ["812 bytes", "37.5 KB", "9.5 MB"]


def test_a_cut_never_splits_a_crlf_or_a_surrogate_pair():
    for head_text in ("x" * (HEAD_CHARS - 1) + "\r\n", "x" * (HEAD_CHARS - 1) + "\ud83d\ude00"):
        part = text_part(head_text + "y" * LONG_CHARS)
        assert part.head == "x" * (HEAD_CHARS - 1), "the pair goes wholly into the left-out middle"
    tail_text = "y" * LONG_CHARS + "\r\n" + "z" * (TAIL_CHARS - 1)
    assert text_part(tail_text).tail == "z" * (TAIL_CHARS - 1)
    pair_tail = "y" * LONG_CHARS + "\ud83d\ude00" + "z" * (TAIL_CHARS - 1)
    assert text_part(pair_tail).tail == "z" * (TAIL_CHARS - 1)


def test_a_cut_anywhere_through_escape_sequences_shows_marks_and_no_control_character():
    for shift in range(len(HOSTILE)):
        text = "x" * (HEAD_CHARS - shift) + HOSTILE * 400
        out = printed(text_in_part(text, "x shows more"))
        assert not set(out) & FORBIDDEN, f"a raw control character got through a cut {shift} characters into the corpus"
        assert "characters left out" in out


def test_a_long_tool_result_is_shown_in_part_and_a_folded_one_reads_only_its_start():
    content = "result line\n" * 1_000_000
    message = Message("tool", content, "tool", 3, tool_result=ToolResult("c1", "lookup", "assistant", False))
    unfolded = printed(result_body(message, folded=False, hint="--full shows it whole"))
    assert "characters left out (12,000,000 in all, 11.4 MB); --full shows it whole" in unfolded
    assert len(unfolded) < 200_000
    assert "result line" in printed(result_body(message, folded=True))
    assert result_body(message, folded=False, head=None).plain == content


def test_huge_call_arguments_are_cut_without_being_parsed():
    arguments = '{"blob": "' + "a" * 10_000_000 + '"}'
    assert compact_arguments(arguments).startswith('{"blob": "aaa') and len(compact_arguments(arguments)) < 1_000


def test_a_text_shown_whole_is_laid_out_in_pieces_that_print_exactly_as_the_whole():
    text = Text("".join(f"line {k} " + "w " * (k % 90) + ("\n\n" if k % 7 == 0 else "\n") for k in range(3_000)) + "x" * 50_000)
    text.stylize("bold", 10, 40_000)
    parts = pieces(text, size=1_000)
    assert len(parts) > 100 and all(len(p) <= 1_000 for p in parts)
    assert printed(Group(*parts)) == printed(Text(text.plain, spans=text.spans))
