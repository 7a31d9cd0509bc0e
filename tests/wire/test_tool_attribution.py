"""Wire attribution on an episode with tool traffic: a reply that calls tools is the turn its request produced, and
tool results, which no request produced, take no request."""

from __future__ import annotations

from testbed.store import WireRecord
from testbed.transcript import Transcript
from testbed.wire.attribution import attribute
from tool_episode import MESSAGES


def record(seq: int, role: str, status: int = 200, tool_calls: bool = False) -> WireRecord:
    message = {"content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]} \
        if tool_calls else {"content": "x"}
    response = {"choices": [{"message": message}]} if status == 200 else {}
    return WireRecord(seq, role, "chat/completions", {"messages": []}, status, response, None, None, 0.01, 0.0)


def test_tool_calls_are_turns_their_requests_made_and_tool_results_take_none():
    transcript = Transcript()
    for m in MESSAGES:
        transcript.append(m)
    records = [record(0, "assistant"), record(1, "user"), record(2, "assistant", tool_calls=True), record(3, "assistant"),
               record(4, "user", tool_calls=True), record(5, "user", 503), record(6, "user"), record(7, "assistant")]
    out = attribute(records, transcript)
    assert [(w.role, w.turn_index) for w in out] == [
        ("assistant", 1), ("user", 2), ("assistant", 3), ("assistant", 6), ("user", 7), ("user", 9), ("user", 9), ("assistant", 10)]
    tool_turns = {m.turn_index for m in MESSAGES if m.role == "tool"}
    assert not tool_turns & {w.turn_index for w in out}
