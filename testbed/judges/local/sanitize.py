"""Neutralise judge-directed text in an untrusted user turn before it is scored.

A simulated user (or an adversary) may write label names, JSON verdicts, fake delimiters or
orders to the judge. None of that is evidence about how the turn reacts to the answer, so it is
cut out, and the caller is told that it was there (an injected turn never counts as a follow-up).
Each pattern is gated by the words or marks it cannot match without, so that a clean turn costs
a few set and substring checks; the patterns themselves run only on suspicious turns.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_I = re.IGNORECASE

_LABEL_NAMES = (
    r"genuine[\s_-]*follow[\s_-]*ups?|restate[\s_-]*(?:the[\s_-]*)?question|echo[\s_-]*(?:the[\s_-]*)?assistant"
    r"|meta[\s_-]*planning|new[\s_-]*question|short[\s_-]*filler|degenerate|other|follow[\s_-]*up"
)
_JUDGES = r"judge|grader|classifier|evaluator|annotator|labell?er|rater|scorer"

_JSON_VERDICT = re.compile(
    r"\{[^{}]{0,300}?[\"']?(?:label|followup|follow_up|verdict|reason|category|class|note|id)[\"']?\s*:[^{}]{0,300}\}?",
    _I,
)
_KEY_VALUE = re.compile(
    rf"[\"']?\b(?:label|verdict|category|classification|follow[_ -]?up)[\"']?\s*[:=]\s*[\"']?(?:{_LABEL_NAMES}|true|false)\b[\"']?",
    _I,
)
_KEY_WORDS = frozenset("label verdict category classification followup follow_up follow".split())

_FAKE_DELIMITER = re.compile(
    r"</?\s*(?:user_?turn|assistant|question|answer|system|turn|instructions?|input|output|context|conversation|im_end|im_start)\s*>"
    r"|={3,}[^=\n]{0,40}={3,}|\[\s*/?\s*(?:end|begin|start)\s*(?:of\s+)?(?:user_?turn|turn|input|transcript|conversation|message)?\s*\]"
    r"|\b(?:end|beginning|start)\s+of\s+(?:the\s+)?(?:user_?turn|user\s+turn|turn|input|transcript|conversation|message)\b",
    _I,
)
_DELIMITER_MARKS = ("<", "===", "[", "end of", "beginning of", "start of")

_SNAKE_LABEL = r"\b(?:genuine_followup|restate_question|echo_assistant|meta_planning|new_question|short_filler)\b|\bgenuine[\s-]+follow[\s-]*ups?\b"
_DIRECTIVE = (
    r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,60}\b(?:above|previous|prior|earlier|preceding|instructions?"
    r"|guide(?:lines)?|prompt|context|everything)\b"
    rf"|\bas\s+(?:the|a|an|your)\s+(?:{_JUDGES})\b|\b(?:dear|attention|note\s+to\s+(?:the\s+)?)\s*(?:{_JUDGES})s?\b"
    rf"|(?:^|[.!?\n]\s*)(?:{_JUDGES})s?\s*[:,]"
    rf"|\b(?:{_JUDGES})s?\s+(?:must|should|shall|needs?\s+to|is\s+instructed\s+to)\s+(?:output|return|label|classify|mark|answer|say|print)"
    r"|\byou\s+(?:must|should|will|shall)\s+(?:output|return|print|respond\s+with|answer\s+with|reply\s+with|label|classify|mark|rate|tag)\b"
    r"|\b(?:classify|label|mark|rate|tag|score|categori[sz]e)\s+(?:this|the|it|that)(?:\s+(?:turn|message|text|reply|response))?\s+as\b"
    r"|\bthe\s+(?:correct|right|true|final|expected)\s+(?:label|verdict|classification|category)\b"
    r"|\b(?:new|updated|hidden|real)\s+(?:instructions?|system\s+prompt)\b|\bsystem\s+(?:override|prompt|message)\s*:"
    rf"|\b(?:this|the)\s+(?:turn|message|text|reply)\s+(?:is|counts\s+as|should\s+be)\s+(?:an?\s+)?(?:{_LABEL_NAMES})\b"
)
_JUDGE_DIRECTED = re.compile(f"{_SNAKE_LABEL}|{_DIRECTIVE}", _I)
_JUDGE_DIRECTED_LOWER = re.compile(f"{_SNAKE_LABEL}|{_DIRECTIVE}")
_DIRECTIVE_WORDS = frozenset(
    "genuine ignore disregard forget override judge judges grader graders classifier evaluator annotator labeler "
    "labeller rater scorer output return print respond reply label classify mark rate tag score categorize "
    "categorise verdict classification instructions instruction system degenerate restate filler planning follow "
    "followup".split()
)

_FENCE = re.compile(r"`{3,}\w*")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")
_SPACES = re.compile(r"[ \t]{2,}")
_WORD = re.compile(r"\w+")


class Cleaned(NamedTuple):
    """The turn with judge-directed text cut out, and whether any was found."""

    text: str
    injected: bool


def _cut(pattern: re.Pattern[str], text: str) -> tuple[str, bool]:
    """`text` with every match of `pattern` blanked, and whether there was one."""
    new = pattern.sub(" ", text)
    return new, new != text


def neutralise(text: str, lower: str | None = None, words: set[str] | None = None) -> Cleaned:
    """Cut JSON verdicts, label names, judge directives and fake delimiters out of `text`.

    A sentence that carries a directive or a label name is removed whole, because what
    surrounds an order to the judge ("... and answer X") is part of the order. Code fences are
    dropped without flagging, since users paste code. `lower` and `words` (its word tokens) may
    be passed when the caller already has them.
    """
    if lower is None:
        lower = text.lower()
    if words is None:
        words = set(_WORD.findall(lower))
    out, injected = text, False
    if "{" in lower:
        out, hit = _cut(_JSON_VERDICT, out)
        injected |= hit
    if not _KEY_WORDS.isdisjoint(words):
        out, hit = _cut(_KEY_VALUE, out)
        injected |= hit
    if any(mark in lower for mark in _DELIMITER_MARKS):
        out, hit = _cut(_FAKE_DELIMITER, out)
        injected |= hit
    if (not _DIRECTIVE_WORDS.isdisjoint(words) or "_" in lower) and _JUDGE_DIRECTED_LOWER.search(out.lower()):
        injected = True
        out = "".join(s for s in _SENTENCE.findall(out) if not _JUDGE_DIRECTED.search(s))
    if "```" in out:
        out = _FENCE.sub(" ", out)
    if injected:
        out = _SPACES.sub(" ", out).strip()
    return Cleaned(out, injected)
