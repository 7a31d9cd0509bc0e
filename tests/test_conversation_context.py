"""The conversation a judged turn carries: spoken messages as they are, tool traffic marked without its text, capped."""

from __future__ import annotations

from testbed.conversation_context import (CONTEXT_MESSAGES, Earlier, capped, clipped, earlier_entries, from_dicts, position, rendered,
                                          user_texts)
from testbed.store.reader import episode_turns
from testbed.transcript import ASSISTANT, TOOL, TOOL_CALLS_COLUMN, USER, Message, ToolCall, ToolResult


def _row(role: str, index: int, text: str, calls: str | None = None) -> dict:
    return {"role": role, "turn_index": index, "content": text, TOOL_CALLS_COLUMN: calls}


def test_tool_traffic_becomes_one_note_naming_who_called_and_how_often_but_no_tool_or_result():
    messages = [Message(USER, "Book me a flight.", "user", 0),
                Message(ASSISTANT, "", "agent", 1, tool_calls=(ToolCall("a", "search_flights", "{}"), ToolCall("b", "get_user", "{}"))),
                Message(TOOL, "SECRET-DATABASE-ROW", "environment", 2, tool_result=ToolResult("a", "search_flights")),
                Message(ASSISTANT, "I found one at 9am.", "agent", 3),
                Message(USER, "", "user", 4, tool_calls=(ToolCall("c", "toggle_airplane_mode", "{}"),)),
                Message(TOOL, "airplane mode off", "environment", 5, tool_result=ToolResult("c", "toggle_airplane_mode", "user"))]
    entries = earlier_entries(messages)
    assert entries == [Earlier(USER, "Book me a flight."), Earlier(TOOL, "[the assistant used tools (2 calls)]"),
                       Earlier(ASSISTANT, "I found one at 9am."), Earlier(TOOL, "[the user used tools (1 call)]")]
    shown = rendered(entries)
    assert not [w for w in ("search_flights", "SECRET", "toggle", "airplane") if w in shown]


def test_a_long_conversation_keeps_its_last_messages_each_clipped_and_says_how_many_were_left_out():
    entries = [Earlier(USER if k % 2 else ASSISTANT, f"message {k} " + "x" * 2000) for k in range(CONTEXT_MESSAGES + 3)]
    kept = capped(entries)
    assert kept[0] == Earlier(TOOL, "[3 earlier messages left out]")
    assert [e.text[:10] for e in kept[1:]] == [e.text[:10] for e in entries[3:]]
    assert all(len(e.text) <= 810 and " … " in e.text for e in kept[1:])
    assert clipped("short") == "short" and capped([]) == ()


def test_the_store_gives_each_later_turn_the_conversation_between_request_and_answer():
    rows = [_row("system", 0, "Be kind."), _row(USER, 1, "What is 2+2?"), _row(ASSISTANT, 2, "4."), _row(USER, 3, "Why?"),
            _row(ASSISTANT, 4, "", '[{"id": "c", "name": "calc", "arguments": "{}"}]'), _row(TOOL, 5, "RESULT"),
            _row(ASSISTANT, 6, "Because 2 and 2 make 4."), _row(USER, 7, "Why?")]
    first, second = episode_turns("e", rows)
    assert (first.question, first.answer, first.context) == ("What is 2+2?", "4.", ())
    assert second.answer == "Because 2 and 2 make 4."
    assert second.context == (Earlier(ASSISTANT, "4."), Earlier(USER, "Why?"), Earlier(TOOL, "[the assistant used tools (1 call)]"))
    assert position(second.context) == 2 and user_texts(second.context) == ["Why?"]


def test_stored_dicts_come_back_as_entries():
    assert from_dicts([{"role": USER, "content": "hi"}, {"role": ASSISTANT, "content": None}]) == (Earlier(USER, "hi"), Earlier(ASSISTANT, ""))
    assert from_dicts(None) == ()
