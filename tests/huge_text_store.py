"""A store whose transcript and wire log hold one huge message, for the views that must show it in part.

The text is built to straddle every cut a view might make: it starts with a hostile escape sequence,
ends with one, and carries escape sequences, CRLFs and astral characters (an emoji) all the way
through, so whatever part a view keeps, a raw control character would show if the cut let it through.
"""

from __future__ import annotations

from pathlib import Path

from hostile_text import HOSTILE
from testbed.store import EpisodeKey, EpisodeOutcome, Store, WireRecord
from testbed.transcript import Message

HUGE_CHARS = 10_000_000
"""The size of the huge message: the 10 MB python-agent reply of issue 36."""

HUGE_RUN = "huge-run"
HUGE_EPISODE = "huge-episode"
HUGE_USER_EPISODE = "huge-user-episode"
"""The episode whose generated user turn (the one the labelling screen shows) is the huge text."""

HEAD_WORD = "HEAD-OF-THE-HUGE-TEXT"
TAIL_WORD = "TAIL-OF-THE-HUGE-TEXT"


def huge_text(chars: int = HUGE_CHARS) -> str:
    """`chars` characters: a recognisable head and tail around lines that each hold an escape sequence, a CRLF and an
    emoji, so no cut can land far from one."""
    line = "line of a huge reply \x1b]0;TITLE\x07 \x1b[31mred 😀 bidi \u202e! cr\r\n"
    body = (line * (chars // len(line) + 1))[:chars - len(HEAD_WORD) - len(TAIL_WORD) - 2 * len(HOSTILE)]
    return HEAD_WORD + HOSTILE + body + HOSTILE + TAIL_WORD


def _key(episode_id: str) -> EpisodeKey:
    return EpisodeKey(episode_id, "item", "gsm8k", "a", "assistant-model", "u", "user-model", "instructed", 0.0, 0, "none")


def build_huge_store(folder: Path, chars: int = HUGE_CHARS) -> tuple[Path, str]:
    """(store path, run id): a finished dialogue run of two episodes, one with a huge assistant reply (and a wire log
    whose request and reply bodies hold it), one whose generated user turn is the huge text."""
    text = huge_text(chars)
    path = folder / "huge.sqlite"
    store = Store(path)
    store.begin_run(HUGE_RUN, scenario="huge", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None,
                    planned=2, framework="autogen")
    messages = [Message("user", "What is 6 times 7?", "dataset", 0),
                Message("assistant", text, "assistant", 1, {"temperature": 0.0}),
                Message("user", "Why is that right?", "user", 2, {"temperature": 0.0}),
                Message("assistant", "Because 6 sevens are 42.", "assistant", 3, {"temperature": 0.0})]
    request = {"messages": [{"role": "user", "content": "What is 6 times 7?"}], "temperature": 0.0}
    answered = WireRecord(0, "assistant", "chat/completions", request, 200,
                          {"choices": [{"message": {"role": "assistant", "content": text}}]}, 3, 4, 0.02, 0.0, 1)
    following = {"messages": [*request["messages"], {"role": "assistant", "content": text},
                              {"role": "user", "content": "Why is that right?"}], "temperature": 0.0}
    second = WireRecord(1, "assistant", "chat/completions", following, 200,
                        {"choices": [{"message": {"role": "assistant", "content": "Because 6 sevens are 42."}}]},
                        5, 6, 0.02, 0.0, 3)
    store.write_episode(HUGE_RUN, EpisodeOutcome(_key(HUGE_EPISODE), messages, "done", "max_turns", wire=(answered, second)))
    user_messages = [Message("user", "What is 6 times 7?", "dataset", 0),
                     Message("assistant", "42.", "assistant", 1, {"temperature": 0.0}),
                     Message("user", text, "user", 2, {"temperature": 0.0}),
                     Message("assistant", "I see.", "assistant", 3, {"temperature": 0.0})]
    store.write_episode(HUGE_RUN, EpisodeOutcome(_key(HUGE_USER_EPISODE), user_messages, "done", "max_turns"))
    store.finish_run(HUGE_RUN, "done")
    store.close()
    return path, HUGE_RUN
