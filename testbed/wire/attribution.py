"""Which turn each recorded request produced."""

from __future__ import annotations

from dataclasses import replace

from testbed.store.records import WireRecord
from testbed.transcript import Transcript


def attribute(records: list[WireRecord], transcript: Transcript) -> tuple[WireRecord, ...]:
    """The records numbered 0.. in the order sent, each with the turn it produced.

    A participant's successful requests produced its generated messages in order (messages with
    sampling; the opening was not generated): a reply that calls tools is such a message too, while
    a `tool` message answers a call and was made by no request, so it is never matched.
    A failed request counts for the turn its retry produced (an unreadable 200 reply is a failed
    request too). What is left over (the user's stop turn, which is not stored when it was only the
    end marker, or a turn that never came because the episode failed) counts for the next turn index.
    """
    pending = transcript.next_turn
    out: list[WireRecord] = []
    for role in sorted({r.role for r in records}):
        turns = iter(m.turn_index for m in transcript.messages if m.role == role and m.sampling is not None and m.reused_from is None)
        waiting: list[WireRecord] = []
        for record in (r for r in records if r.role == role):
            waiting.append(record)
            if record.answered:
                turn = next(turns, pending)
                out.extend(replace(r, turn_index=turn) for r in waiting)
                waiting = []
        out.extend(replace(r, turn_index=pending) for r in waiting)
    out.sort(key=lambda r: r.seq)
    return tuple(replace(r, seq=i) for i, r in enumerate(out))
