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
_JUDGE_WORDS = (
    "judge judges grader graders classifier classifiers evaluator evaluators annotator annotators labeler labeller rater "
    "raters scorer"
)


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


_CUT_MARK = "\x1f"
"""Stands where a verdict object was cut, so that a directive naming it ends there."""

_JSON_VERDICT = re.compile(
    r"\{[^{}]{0,300}?[\"']?(?:label|followup|follow_up|verdict|reason|category|class|note|id)[\"']?\s*:[^{}]{0,300}\}?"
)
"""A JSON object with verdict-like keys, cut first: its inside must not be read as sentences."""

_CUTS = (
    _gated(
        r"[\"']?\b(?:label|verdict|category|classification|follow[_ -]?up)[\"']?\s*[:=]\s*[\"']?"
        rf"(?:{_LABEL_NAMES}|true|false)\b[\"']?",
        "label verdict category classification followup follow_up follow",
        ("follow-up", "follow up"),
    ),
    _gated(
        r"</?\s*[a-z_]*(?:user|assistant|system|turn|question|answer|instruction|input|output|context|conversation|judge"
        r"|label|verdict|im_end|im_start)[a-z_]*\s*>",
        marks=("<",),
    ),
    _gated(r"<{2,}\s*/?\s*(?:begin|end|start)\b[^<>\n]{0,80}>{2,}", marks=("<",)),
    _gated(r"\{\s*(?:question|answer|assistant|user_?turn|turn|labels?|reason|verdict|id|note|followup)\s*\}", marks=("{",)),
    _gated(r"={3,}[^=\n]{0,40}={3,}", marks=("===",)),
    _gated(r"\buser_?turn\s+(?:ends|begins|starts)\s+here\b", "user_turn userturn"),
    _gated(r"(?m)^\s*(?:user_?turn|system|judge|instructions)\s*:\s*$", "user_turn userturn system judge instructions"),
    _gated(r"([-*#~_+])\1{2,}\s*(?:end|begin|start|stop)\b[^\n]{0,30}?\1{3,}", marks=("---", "***", "##", "~~~", "_", "+++")),
    _gated(r"#{2,}\s*(?:end|begin|start|stop)(?:\s+of(?:\s+the)?(?:\s+user)?\s+\w+)?\b\s*#*", marks=("##",)),
    _gated(
        r"(?m)^[^\w\n]{0,10}(?:end|begin)(?:\s+of)?"
        r"(?:\s+(?:the|user|turn|input|message|transcript|conversation|instructions?|prompt))*[^\w\n]{0,10}$",
        "end begin",
    ),
    _gated(
        r"\[[^\]\n]{0,30}\b(?:end|begin|start)\b[^\]\n]{0,40}\]"
        r"|\b(?:end|beginning|start)\s+of\s+(?:the\s+)?(?:user_?turn|user\s+turn|turn|input|transcript|conversation|message)\b",
        "end beginning start",
        ("[end", "[ end", "[/", "[begin", "[start"),
    ),
)
"""Fragments cut out where they stand: `label: X` pairs, fake tags and fences, template slots, delimiter lines."""

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
        rf"|\b(?:{_JUDGES})s?\s+(?:must|should|shall|needs?\s+to|is\s+instructed\s+to)\s+"
        r"(?:output|return|label|classify|mark|answer|say|print)",
        _JUDGE_WORDS,
    ),
    _gated(
        r"\byou\s+(?:must|should|will|shall)\s+(?:output|return|print|label|classify)\b"
        r"|\b(?:classify|label|mark|rate|tag|score|categori[sz]e)\s+(?:this|the|it|that)"
        r"(?:\s+(?:turn|message|text|reply|response))?\s+as\b"
        r"|\bthe\s+(?:(?:correct|right|true|final|expected)\s+)?(?:label|verdict|classification|category)\b"
        r"(?:\s+(?:is|for|should|must)\b|\s*:)"
        r"|\b(?:other|any|these|those|all)\s+(?:other\s+)?labels\b",
        "output return print label labels classify mark rate tag score categorize categorise verdict classification category",
    ),
    _gated(
        r"\b(?:reply|respond|answer|output|return|print)\s+(?:with\s+)?(?:only\s+)?(?:a\s+)?(?:json|yaml)\b"
        rf"|\b(?:output|return|print|reply|respond|answer|say)\b[^.\n]{{0,20}}{_CUT_MARK}"
        r"|\bstop\s+(?:judging|labell?ing|classifying|evaluating)\b",
        "json yaml judging labeling labelling classifying evaluating",
        (_CUT_MARK,),
    ),
    _gated(
        r"\b(?:new|updated|hidden|real)\s+(?:instructions?|system\s+prompt)\b|\bsystem\s+(?:override|prompt|message)\s*:",
        "instructions instruction system",
        ("system prompt", "system override", "system message"),
    ),
    _gated(
        rf"\b(?:this|the)\s+(?:turn|message|text|reply)\s+(?:is|counts\s+as|should\s+be)\s+(?:an?\s+)?(?:{_LABEL_NAMES})\b",
        "degenerate restate filler planning echo followup",
    ),
)
"""Orders to the judge and label names: each is removed with the rest of its order (`_cut_directives`)."""

_GATE_WORDS = frozenset().union(*(g.words for g in _CUTS + _DIRECTIVES))
_GATE_CHARS = re.compile(r"[{<_\[~]")
_GATE_RUNS = ("===", "---", "***", "+++", "##")
"""Every gate mark holds one of `_GATE_CHARS` or `_GATE_RUNS`, or a gate word: the clean-turn check."""

LEAD_IN_WORDS = 6
"""Words before a directive, in its sentence, that are taken as part of it."""

TRAIL_WORDS = 6
"""Words after the label a directive names, in its sentence, that are taken as part of it."""

_LABEL_END = re.compile(rf"(?:(?:{_LABEL_NAMES}|true|false)\b[\"'}}\])>]*|{_CUT_MARK})")
_FENCE = re.compile(r"`{3,}\w*")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")
_SPACES = re.compile(r"[ \t]{2,}")
_BARE_LINE = re.compile(r"(?m)^[^\w\n]*\n")
_WORD = re.compile(r"\w+")


class Cleaned(NamedTuple):
    """The turn with judge-directed text cut out, and whether any was found."""

    text: str
    injected: bool


def _cut_directives(sentence: str, patterns: list[_Gated]) -> str:
    """`sentence` without its judge-directed part; a newline that ended it is kept.

    An order runs from its first word to the label it names ("... and answer X") or, naming
    none, to the end of its sentence. A few words before it belong to it ("output X"), and so do
    a few lower-case words after the label ("X because it asks"); longer stretches, or a new
    capitalised sentence, are the turn itself, glued to the injection, and are kept.
    """
    lower = sentence.lower()
    starts = [m.start() for p in patterns if (m := p.pattern.search(lower))]
    if not starts:
        return sentence
    start = min(starts)
    labels = [m.end() for m in _LABEL_END.finditer(lower, start)]
    end = labels[-1] if labels else len(sentence)
    head, tail = sentence[:start], sentence[end:]
    if len(head.split()) <= LEAD_IN_WORDS:
        head = ""
    if len(tail.split()) <= TRAIL_WORDS and not tail.lstrip(" \"'").strip()[:1].isupper():
        tail = ""
    kept = head + " " + tail if head and tail else head + tail
    return kept + "\n" if sentence.endswith("\n") and not kept.endswith("\n") else kept


def neutralise(text: str, lower: str | None = None, words: set[str] | None = None) -> Cleaned:
    """Cut JSON verdicts, label names, judge directives and fake delimiters out of `text`.

    Verdict objects go first (their inside is not prose), then directives with the order they
    carry, then `label: X` pairs, fake tags and delimiter lines. Code fences are dropped without
    flagging, since users paste code. `lower` and `words` (its word tokens) may be passed when
    the caller already has them.
    """
    if lower is None:
        lower = text.lower()
    if words is None:
        words = set(_WORD.findall(lower))
    if _GATE_WORDS.isdisjoint(words) and _GATE_CHARS.search(lower) is None and not any(map(lower.__contains__, _GATE_RUNS)):
        return Cleaned(_FENCE.sub(" ", text) if "```" in text else text, False)
    out, injected = text, False
    if "{" in lower and _JSON_VERDICT.search(lower):
        out = re.sub(_JSON_VERDICT.pattern, f" {_CUT_MARK} ", out, flags=re.IGNORECASE)
        lower, injected = out.lower(), True
    directives = [d for d in _DIRECTIVES if d.gate(lower, words) and d.pattern.search(lower)]
    if directives:
        injected = True
        out = "".join(_cut_directives(s, directives) for s in _SENTENCE.findall(out))
        lower = out.lower()
    for cut in _CUTS:
        if cut.gate(lower, words) and cut.pattern.search(lower):
            out = re.sub(cut.pattern.pattern, " ", out, flags=re.IGNORECASE)
            injected = True
    if "```" in out:
        out = _FENCE.sub(" ", out)
    if injected:
        out = _BARE_LINE.sub("", _SPACES.sub(" ", out.replace(_CUT_MARK, " ")) + "\n").strip()
    return Cleaned(out, injected)
