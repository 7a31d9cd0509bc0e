"""What the conversation before a turn says about it: repeats of the user's own earlier turns, copies of earlier
answers, whether the latest message asked the user something, and where the turn stands.

These are the measurements a later turn needs and a first reply cannot have (`testbed.conversation_context`). The
rules (`with_conversation`) apply the labelling guide's round-3 reading of repeats (judges/training/ANNOTATION.md):
the second time a user says the same thing it restates, from the third time on it loops. The learned judge reads
the same numbers as features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from testbed.conversation_context import TOOL, Earlier, assistant_texts, position, user_texts
from testbed.judges.local import cues
from testbed.judges.local.features import IGNORED, trigrams
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import Verdict

NEAR_REPEAT = 0.8
"""Word-set overlap (Jaccard) at or above which two turns say the same thing."""
ASK_TAIL = 400
"""Characters at the end of the latest message searched for a question to the user."""

_TAXONOMY = taxonomy()
RESTATED = frozenset({_TAXONOMY.followup_label, "new_question", "other", "meta_planning"})
"""Labels a second saying of the user's own earlier turn replaces with `restate_question` (a repeated echo stays an
echo and a repeated thanks stays filler, as the guide's round 3 says)."""


@dataclass(frozen=True)
class ConversationFeatures:
    """Measurements of a turn against the conversation before it; all zero for a first reply."""

    position: int
    """1 for the user's first reply to an answer, 2 for the next, …"""
    own_repeats: int
    """Earlier user turns this turn nearly repeats (word-set overlap ≥ `NEAR_REPEAT`, or the same words)."""
    own_overlap: float
    """The largest share of the turn's content words found in one earlier user turn."""
    own_tri: float
    """Share of the turn's word trigrams found in the user's earlier turns."""
    earlier_answer_tri: float
    """Share of the turn's word trigrams found in the assistant's earlier messages (not the latest one)."""
    answer_asks: bool
    """The latest message asks the user something (a question mark near its end)."""
    tools: bool
    """Tools were used earlier in the conversation."""


def _words(text: str) -> list[str]:
    return cues.tokens(text.lower())


def _near(a: set[str], b: set[str], a_words: list[str], b_words: list[str]) -> bool:
    if not a or not b:
        return False
    if a_words == b_words:
        return True
    return len(a & b) / len(a | b) >= NEAR_REPEAT and min(len(a_words), len(b_words)) >= 3


def conversation_features(user_turn: str, assistant: str, context: Sequence[Earlier]) -> ConversationFeatures:
    """The measurements of `user_turn`, replying to `assistant`, after `context`."""
    asks = "?" in (assistant or "")[-ASK_TAIL:]
    if not context:
        return ConversationFeatures(1, 0, 0.0, 0.0, 0.0, asks, False)
    words = _words(user_turn or "")
    word_set = set(words)
    content = word_set.difference(IGNORED)
    tri = trigrams(words)
    n_tri = len(tri) or 1
    repeats, overlap, own_tri = 0, 0.0, set()
    for earlier in user_texts(context):
        e_words = _words(earlier)
        e_set = set(e_words)
        repeats += _near(word_set, e_set, words, e_words)
        if content:
            overlap = max(overlap, len(content & e_set) / len(content))
        own_tri |= trigrams(e_words)
    answer_tri = set().union(*(trigrams(_words(a)) for a in assistant_texts(context))) if assistant_texts(context) else set()
    return ConversationFeatures(position(context), repeats, overlap, len(tri & own_tri) / n_tri, len(tri & answer_tri) / n_tri,
                                asks, any(e.role == TOOL for e in context))


def with_conversation(verdict: Verdict, conv: ConversationFeatures) -> Verdict:
    """The rules' verdict read against the conversation: a third saying of the user's own turn is a loop
    (`degenerate`), a second saying of it instead of a reaction restates (`restate_question`)."""
    if conv.own_repeats >= 2 and verdict.label != "degenerate":
        return Verdict("degenerate", False, f"the user's own earlier turn, said again ({conv.own_repeats + 1} times)")
    if conv.own_repeats == 1 and verdict.label in RESTATED:
        return Verdict("restate_question", False, "repeats the user's own earlier turn")
    return verdict
