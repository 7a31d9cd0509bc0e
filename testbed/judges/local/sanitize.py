"""Neutralise judge-directed text in an untrusted user turn before it is scored.

A simulated user (or an adversary) may write label names, JSON verdicts, fake delimiters or
orders to the judge. None of that is evidence about how the turn reacts to the answer, so it is
cut out, and the caller is told that it was there (an injected turn never counts as a follow-up).
A cheap pre-check keeps the common, clean turn on a fast path.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_I = re.IGNORECASE

_LABEL_NAMES = (
    r"genuine[\s_-]*follow[\s_-]*ups?|restate[\s_-]*(?:the[\s_-]*)?question|echo[\s_-]*(?:the[\s_-]*)?assistant|meta[\s_-]*planning"
    r"|new[\s_-]*question|short[\s_-]*filler|degenerate|other|follow[\s_-]*up"
)

_PRECHECK = re.compile(
    r"genuine|follow[\s_-]*up|_|label|verdict|judge|grader|classif|annotat|evaluator|ignore|disregard|forget|instruction"
    r"|override|system\s*(?:prompt|message)|```|</|<\s*/?\s*(?:user|assistant|system|question|answer|turn)|===|---|\{|\bend\b|\bbegin\b"
    r"|you\s+must\s+(?:output|answer|return|say|respond|label|classify|print|reply)",
    _I,
)

_JSON_VERDICT = re.compile(
    r"\{[^{}]{0,300}?[\"']?(?:label|followup|follow_up|verdict|reason|category|class|note|id)[\"']?\s*:[^{}]{0,300}\}?",
    _I,
)
_KEY_VALUE = re.compile(
    rf"[\"']?\b(?:label|verdict|category|class(?:ification)?|followup|follow[_-]up|answer|output|result)[\"']?\s*[:=]\s*[\"']?(?:{_LABEL_NAMES}|true|false|yes|no)\b[\"']?",
    _I,
)
_SNAKE_LABEL = re.compile(
    r"\b(?:genuine_followup|restate_question|echo_assistant|meta_planning|new_question|short_filler)\b|\bgenuine[\s-]+follow[\s-]*ups?\b",
    _I,
)
_DIRECTIVE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,60}\b(?:above|previous|prior|earlier|preceding|instructions?|rules?|guide(?:lines)?|prompt|context|everything)\b"
    r"|\bas\s+(?:the|a|an|your)\s+(?:judge|grader|classifier|evaluator|annotator|labell?er|rater)\b"
    r"|\b(?:dear|attention|note\s+to\s+(?:the)?)\s*(?:judge|grader|classifier|evaluator|annotator)s?\b"
    r"|\b(?:judge|grader|classifier|evaluator|annotator|labell?er|rater)s?\s*(?::|,|must|should|will|shall|needs?\s+to|is\s+instructed)"
    r"|\b(?:you\s+must|you\s+should|you\s+will|must|always|please)\s+(?:output|return|print|respond\s+with|answer\s+with|reply\s+with|label|classify|mark|rate|tag|say)\b"
    r"|\b(?:classify|label|mark|rate|tag|score|categori[sz]e)\s+(?:this|the|it|that)(?:\s+(?:turn|message|text|reply|response))?\s+as\b"
    r"|\bthe\s+(?:correct|right|true|final)\s+(?:label|verdict|classification|category)\b"
    r"|\b(?:new|updated|hidden|system)\s+(?:instructions?|rules?|prompt)\b|\bsystem\s+(?:override|message)\b"
    r"|\b(?:this|the)\s+(?:turn|message|text|reply)\s+(?:is|counts\s+as|should\s+be)\s+(?:a\s+)?(?:" + _LABEL_NAMES + r")\b",
    _I,
)
_FAKE_DELIMITER = re.compile(
    r"</?\s*(?:user_?turn|assistant|question|answer|system|turn|instructions?|input|output|context|conversation|im_end|im_start)\s*>"
    r"|={3,}[^=\n]{0,40}={3,}|-{3,}\s*(?:end|begin|start|stop)[^-\n]{0,30}-{3,}|#{2,}\s*(?:end|begin)\b[^\n]{0,30}"
    r"|\[\s*/?\s*(?:end|begin|start)\s*(?:of\s+)?(?:user_?turn|turn|input|transcript|conversation|message)?\s*\]"
    r"|\b(?:end|begin|start)\s+of\s+(?:the\s+)?(?:user_?turn|user\s+turn|turn|input|transcript|conversation|message)\b",
    _I,
)
_FENCE = re.compile(r"`{3,}\w*")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")


class Cleaned(NamedTuple):
    """The turn with judge-directed text cut out, and whether any was found."""

    text: str
    injected: bool


def neutralise(text: str) -> Cleaned:
    """Cut JSON verdicts, label names, judge directives and fake delimiters out of `text`.

    Sentences that carry a directive are removed whole, because what surrounds an order to the
    judge ("... and answer X") is part of the order; fences are dropped without flagging, since
    users paste code.
    """
    if not _PRECHECK.search(text):
        return Cleaned(text, False)
    injected = False
    out = _JSON_VERDICT.sub(" ", text)
    injected |= out != text
    for pattern in (_KEY_VALUE, _FAKE_DELIMITER):
        new = pattern.sub(" ", out)
        injected |= new != out
        out = new
    if _DIRECTIVE.search(out) or _SNAKE_LABEL.search(out):
        injected = True
        kept = [s for s in _SENTENCE.findall(out) if not (_DIRECTIVE.search(s) or _SNAKE_LABEL.search(s))]
        out = "".join(kept)
    out = _FENCE.sub(" ", out)
    if injected:
        out = re.sub(r"[ \t]{2,}", " ", out).strip()
    return Cleaned(out, injected)
