"""Neutralise judge-directed text in an untrusted user turn before it is scored.

A simulated user (or an adversary) may write label names, JSON verdicts, fake delimiters or
orders to the judge. None of that is evidence about how the turn reacts to the answer, so it is
cut out, and the caller is told that it was there (an injected turn never counts as a follow-up).
Every pattern is gated by words or marks it cannot match without, so that a clean turn costs a
few set and substring checks; a pattern runs only on a turn that carries its gate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

_LABEL_NAMES = (
    r"genuine[\s_-]*follow[\s_-]*ups?|restate[\s_-]*(?:the[\s_-]*)?question|echo[\s_-]*(?:the[\s_-]*)?assistant"
    r"|meta[\s_-]*planning|new[\s_-]*question|short[\s_-]*filler|degenerate|other|follow[\s_-]*up"
)
_JUDGES = r"judge|grader|classifier|evaluator|annotator|labell?er|rater|scorer"
_JUDGE_WORDS = "judge judges grader graders classifier classifiers evaluator evaluators annotator annotators labeler labeller rater raters scorer"


@dataclass(frozen=True)
class _Gated:
    """A pattern (matched on lower-cased text) and the words or marks it cannot match without."""

    pattern: re.Pattern[str]
    words: frozenset[str]
    marks: tuple[str, ...] = ()

    def gate(self, lower: str, words: set[str]) -> bool:
        """True when the turn carries one of the gate words or marks."""
        return not self.words.isdisjoint(words) or any(m in lower for m in self.marks)


def _gated(pattern: str, words: str = "", marks: tuple[str, ...] = ()) -> _Gated:
    return _Gated(re.compile(pattern), frozenset(words.split()), marks)


_CUTS = (
    _gated(
        r"\{[^{}]{0,300}?[\"']?(?:label|followup|follow_up|verdict|reason|category|class|note|id)[\"']?\s*:[^{}]{0,300}\}?",
        marks=("{",),
    ),
    _gated(
        rf"[\"']?\b(?:label|verdict|category|classification|follow[_ -]?up)[\"']?\s*[:=]\s*[\"']?(?:{_LABEL_NAMES}|true|false)\b[\"']?",
        "label verdict category classification followup follow_up",
        ("follow-up", "follow up"),
    ),
    _gated(
        r"</?\s*(?:user_?turn|assistant|question|answer|system|turn|instructions?|input|output|context|conversation|im_end|im_start)\s*>",
        marks=("<",),
    ),
    _gated(r"={3,}[^=\n]{0,40}={3,}", marks=("===",)),
    _gated(
        r"\[\s*/?\s*(?:end|begin|start)\s*(?:of\s+)?(?:user_?turn|turn|input|transcript|conversation|message)?\s*\]"
        r"|\b(?:end|beginning|start)\s+of\s+(?:the\s+)?(?:user_?turn|user\s+turn|turn|input|transcript|conversation|message)\b",
        "user_turn turn input transcript conversation message",
        ("[end", "[ end", "[/", "[begin", "[start"),
    ),
)
"""Fragments cut out where they stand: verdict objects, `label: X` pairs, fake tags and fences."""

_DIRECTIVES = (
    _gated(
        r"\b(?:genuine_followup|restate_question|echo_assistant|meta_planning|new_question|short_filler)\b"
        r"|\bgenuine[\s-]+follow[\s-]*ups?\b",
        "genuine",
        ("_",),
    ),
    _gated(
        r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,60}\b(?:above|previous|prior|earlier|preceding|instructions?"
        r"|guide(?:lines)?|prompt|context|everything)\b",
        "ignore disregard forget override",
    ),
    _gated(
        rf"\bas\s+(?:the|a|an|your)\s+(?:{_JUDGES})\b|\b(?:dear|attention|note\s+to\s+(?:the\s+)?)\s*(?:{_JUDGES})s?\b"
        rf"|(?:^|[.!?\n]\s*)(?:{_JUDGES})s?\s*[:,]"
        rf"|\b(?:{_JUDGES})s?\s+(?:must|should|shall|needs?\s+to|is\s+instructed\s+to)\s+(?:output|return|label|classify|mark|answer|say|print)",
        _JUDGE_WORDS,
    ),
    _gated(
        r"\byou\s+(?:must|should|will|shall)\s+(?:output|return|print|label|classify)\b"
        r"|\b(?:classify|label|mark|rate|tag|score|categori[sz]e)\s+(?:this|the|it|that)(?:\s+(?:turn|message|text|reply|response))?\s+as\b"
        r"|\bthe\s+(?:correct|right|true|final|expected)\s+(?:label|verdict|classification|category)\b",
        "output return print label classify mark rate tag score categorize categorise verdict classification category",
    ),
    _gated(
        r"\b(?:new|updated|hidden|real)\s+(?:instructions?|system\s+prompt)\b|\bsystem\s+(?:override|prompt|message)\s*:",
        "instructions instruction",
        ("system prompt", "system override", "system message"),
    ),
    _gated(
        rf"\b(?:this|the)\s+(?:turn|message|text|reply)\s+(?:is|counts\s+as|should\s+be)\s+(?:an?\s+)?(?:{_LABEL_NAMES})\b",
        "degenerate restate filler planning echo followup",
    ),
)
"""Orders to the judge and label names: the whole sentence that carries one is removed."""

_GATE_WORDS = frozenset().union(*(g.words for g in _CUTS + _DIRECTIVES))
_GATE_MARKS = tuple(sorted({m for g in _CUTS + _DIRECTIVES for m in g.marks}))
_FENCE = re.compile(r"`{3,}\w*")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")
_SPACES = re.compile(r"[ \t]{2,}")
_WORD = re.compile(r"\w+")


class Cleaned(NamedTuple):
    """The turn with judge-directed text cut out, and whether any was found."""

    text: str
    injected: bool


def _directed(sentence: str, patterns: list[_Gated]) -> bool:
    """True when one of `patterns` occurs in `sentence`."""
    lower = sentence.lower()
    return any(p.pattern.search(lower) for p in patterns)


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
    if _GATE_WORDS.isdisjoint(words) and not any(m in lower for m in _GATE_MARKS):
        return Cleaned(_FENCE.sub(" ", text) if "```" in text else text, False)
    out, injected = text, False
    for cut in _CUTS:
        if cut.gate(lower, words) and cut.pattern.search(lower):
            out = re.sub(cut.pattern.pattern, " ", out, flags=re.IGNORECASE)
            injected = True
    if injected:
        lower = out.lower()
    directives = [d for d in _DIRECTIVES if d.gate(lower, words) and d.pattern.search(lower)]
    if directives:
        injected = True
        out = "".join(s for s in _SENTENCE.findall(out) if not _directed(s, directives))
    if "```" in out:
        out = _FENCE.sub(" ", out)
    if injected:
        out = _SPACES.sub(" ", out).strip()
    return Cleaned(out, injected)
