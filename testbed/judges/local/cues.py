"""Precompiled phrase cues for the local classifier: each pattern names one behaviour of a user turn.

Patterns run on lower-cased text (case-insensitive matching is several times slower in `re`).
Each `Cue` carries trigger words, at least one of which every alternative of its pattern
contains: a turn with none of them skips the regex entirely, which keeps judging fast. Every
pattern is anchored on wording that a user or an assistant would actually write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_M = re.MULTILINE

_PUNCTUATION = "".join(chr(c) for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))
_UNICODE_PUNCTUATION = "’‘“”„‚—–…«»■•·′″¡¿，。！？：；、（）【】《》"
_SEPARATORS = str.maketrans(dict.fromkeys(_PUNCTUATION + _UNICODE_PUNCTUATION, " "))


def tokens(lower: str) -> list[str]:
    """Word tokens of lower-cased text, split on whitespace and punctuation.

    The same tokens as a word-character regex on ordinary text, about twice as fast (a
    translation table and `split` run in C), which matters at tens of thousands of turns per second.
    """
    return lower.translate(_SEPARATORS).split()


@dataclass(frozen=True)
class Cue:
    """A phrase pattern and the words without which it cannot match."""

    pattern: re.Pattern[str]
    triggers: frozenset[str] = frozenset()

    def found(self, lower: str, words: set[str] | frozenset[str]) -> bool:
        """True when the pattern occurs in `lower`; `words` are the turn's word tokens."""
        if self.triggers and self.triggers.isdisjoint(words):
            return False
        return self.pattern.search(lower) is not None


def _cue(pattern: str, triggers: str = "", flags: int = 0) -> Cue:
    return Cue(re.compile(pattern, flags), frozenset(triggers.split()))


TEMPLATE_MARKS = ("<|", "|>", "[inst]", "[/inst]", "<s>", "</s>", "<<sys>>", "_of_turn>")
"""Chat-template control tokens (lower-cased) that no human types; each holds `<`, `|` or `[`."""

ROLE_LINE = _cue(r"^\s*(?:user|assistant|system|human|model)\s*$", "user assistant system human model", _M)
"""A bare role name on its own line, what a template leaves behind when its tokens are decoded."""

ASSISTANT_TAG = _cue(r"^\s*(?:assistant|ai|bot|gpt|model)\s*:", "assistant ai bot gpt model", _M)
"""A line that begins with an assistant speaker tag: the turn speaks (or scripts) the assistant."""

ROLE_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:user|human|me)\s*:\s*", re.IGNORECASE)
"""A leading `User:` speaker tag; stripped so that the rest of the turn is judged on its content."""

FRAME_LEAD = re.compile(
    r"\s*(?:based\s+on\s+the\s+(?:information|details|text|passage|data|problem|question)(?:\s+(?:provided|given|above))?"
    r"|according\s+to\s+the\s+(?:text|passage|problem|question|information)"
    r"|what\s+is\s+the\s+answer\s+to\s+(?:the|this)\s+question)\s*[,:]?\s*",
    re.IGNORECASE,
)
"""A contentless lead-in (`Based on the information provided, ...`), stripped so the question itself is judged."""

USER_NEXT = re.compile(
    r"(?:sure[,!]?\s*)?(?:here(?:'s| is)\s+)?(?:the\s+)?user(?:'s|s)?\s+next\s+message(?:\s+is)?(?:\s+done)?\s*[:.]?"
    r"|now\s+you\s+are\s+the\s+user\.?(?:\s*write\s+the\s+user's\s+next\s+message\s+only\.?)?",
    re.IGNORECASE,
)
"""Scaffolding echoed from the role-play instruction; removed before judging what remains."""

PLANNING = re.compile(
    r"\s*(?:okay|ok|alright|so|hmm+)?[,.]?\s*(?:first(?:ly)?,?\s+)?(?:i\s+(?:need|have|want|should|must|will)\s+to\s+"
    r"(?:figure|find|determine|consider|think|understand|analy[sz]e|work|check|respond|reply|write|answer|come up)"
    r"|let\s+me\s+(?:think|analy[sz]e|start|break|consider|figure|see|first|work|check|re-?read|look|recall|parse)"
    r"|let's\s+(?:think|analy[sz]e|break\s+down\s+the\s+(?:request|conversation|task))"
    r"|the\s+user\s+(?:wants|is\s+asking|asked|needs|has\s+asked|would\s+like|is\s+looking|requests|'s\s+(?:request|question))"
    r"|i(?:'m|\s+am)\s+(?:currently\s+)?(?:thinking|planning|considering|going\s+to\s+(?:think|plan|analy))"
    r"|my\s+(?:plan|approach|task)\s+(?:is|will)"
    r"|(?:thinking|analysis|plan|reasoning)\s*:)"
)
"""Thinking aloud about how to respond (used with `match` on each line): the model plans instead of speaking."""

PLANNING_TRIGGERS = frozenset(
    "need have want should must will let user thinking planning considering going my analysis plan reasoning".split()
)
"""Words without which `PLANNING` cannot match."""

PLANNING_LINES = 4
"""Lines at the head of a turn that may open with planning: it shows at the start."""

THINK_MARKS = ("<think>", "channel|>analysis")
"""Reasoning-channel markers (each holds `<` or `|`): the model's hidden thinking leaked into the turn."""


def plans(lower: str, words: set[str] | frozenset[str]) -> bool:
    """True when one of the first lines of `lower` opens with a planning phrase."""
    if PLANNING_TRIGGERS.isdisjoint(words):
        return False
    if "\n" not in lower:
        return PLANNING.match(lower) is not None
    return any(PLANNING.match(line) for line in lower.split("\n", PLANNING_LINES)[:PLANNING_LINES])


SELF_META = _cue(
    r"\b(?:simulation\s+mode|as\s+the\s+(?:simulated\s+)?user,?\s+i|i\s+am\s+(?:now\s+)?the\s+user)\b",
    "simulation user",
)
"""The writer describes its own role or state instead of speaking in it."""

OFFER = _cue(
    r"\b(?:i(?:'m|\s+am|'d\s+be|\s+would\s+be)\s+(?:glad|happy|here|ready|delighted)\s+to\s+(?:help|assist)"
    r"|i(?:'m|\s+am)\s+here\s+to\s+(?:help|assist)"
    r"|(?:how|what)\s+can\s+i\s+(?:help|assist|do\s+for\s+you|do\s+to)"
    r"|is\s+there\s+anything\s+else\s+(?:you|i)"
    r"|anything\s+else\s+i\s+(?:could|can)\s+help"
    r"|let\s+me\s+know\s+if|feel\s+free\s+to\s+ask|please\s+ask\s+me"
    r"|i\s+hope\s+(?:this|that)\s+helps"
    r"|(?:do|would)\s+you\s+(?:want|like)\s+me\s+to"
    r"|was\s+(?:it|this|that)\s+helpful"
    r"|i(?:'m|\s+am)\s+sorry,?\s+but\s+i\s+(?:can(?:'|no)t|am\s+unable)"
    r"|as\s+an\s+ai\b|i(?:'m|\s+am)\s+an\s+ai\b"
    r"|what(?:'s|\s+is)\s+your\s+next\s+question"
    r"|(?:^|\n)\s*sure[!,.]\s+here(?:'s|\s+is)"
    r"|(?:^|\n)\s*certainly[!,.]\s+)",
    "help assist can anything know free ask hope want like helpful sorry ai question sure certainly",
)
"""Assistant-style offers, refusals and self-descriptions: the model still speaks as the assistant."""

SOLVING = _cue(
    r"\b(?:to\s+(?:solve|find|determine|calculate|answer)\s+(?:this|the)\b[^.?!\n]{0,40},?\s+we\s+(?:need|have|can|must)"
    r"|here(?:'s|\s+is)\s+(?:a|the)\s+step[- ]by[- ]step"
    r"|step\s+1\s*:|the\s+(?:final\s+)?answer\s+is\b"
    r"|therefore,\s+the\s+answer|so,?\s+the\s+answer\s+is)",
    "solve find determine calculate answer step",
)
"""The turn solves or answers the task itself, as an assistant would."""

GENERIC_ASK = _cue(
    r"^\s*(?:\d+\.\s*)?(?:what(?:'s|\s+is|\s+are)\s+(?:the|some)\s+(?:best|most\s+\w+|main|key|top)\s+"
    r"(?:way|ways|thing|things|part|tips?|steps?|advice|factors?)"
    r"|what\s+is\s+the\s+probability|how\s+(?:do|can|should)\s+i\s+(?:write|make|improve|prepare|learn|start|become|find|get)"
    r"|(?:can|could)\s+you\s+help\s+me\s+(?:with|find|write|make|to)|i(?:'m|\s+am)\s+looking\s+for\s+(?:a|an|some)\b)",
)
"""A generic advice or textbook question that stands on its own, whatever the answer said."""

VARIANT = _cue(
    r"\b(?:if|suppose|supposing|what\s+if|assuming)\b[^?.]{0,80}?\b(?:one|two|\d+)\s+(?:additional|more|extra|fewer|less)\b"
    r"|\b(?:if|suppose|what\s+if)\b[^?.]{0,80}?\binstead\b|\bone\s+additional\b",
    "if suppose supposing assuming additional",
)
"""A variant of the problem ("if one additional tub were sold instead"): a new problem, not a reaction."""

_LEAD = r"\s*(?:(?:ok|okay|thanks|thank\s+you|great|cool|alright|now|so|but|and|also|hmm+|wait|sorry|actually)[,!.]?\s+)*"

QUESTION_OPENER = re.compile(
    _LEAD + r"(?:what|what's|how|why|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|could|would|will"
    r"|should|shall|may|might|has|have|had|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|couldn't|shouldn't)\b"
)
"""An interrogative first word (used with `match`): shaped as a question even without a question mark."""

REQUEST_OPENER = re.compile(
    _LEAD + r"(?:please\s+)?(?:tell|give|show|explain|describe|list|write|create|generate|make|provide|help|summari[sz]e"
    r"|translate|compare|find|calculate|solve|compute|suggest|recommend|redo|rewrite|shorten|simplify|expand|fix|correct"
    r"|recalculate|continue|finish|try|do\s+it|i\s+(?:want|need|would\s+like)|i'd\s+like|i'm\s+looking)\b"
)
"""An imperative or request opener (used with `match`): the turn asks for something."""

FILLER_WORDS = frozenset(
    "thanks thank you thx ty ok okay k great got it cool nice perfect sounds good see next time tomorrow later soon "
    "bye goodbye awesome appreciate appreciated alright all right sure yes yeah yep no nope hmm wow lol fine "
    "very much a lot so understood i see that helps helped makes sense wonderful excellent amazing gotcha right "
    "have day night well done again for the this that was is it s you too".split()
)
"""Words of a contentless reply; a short turn made only of these is filler."""

FILLER_HEAD = frozenset(
    "thanks thank ok okay great got cool nice perfect see bye goodbye awesome alright sure yes no wow fine "
    "understood wonderful excellent amazing gotcha appreciate".split()
)
"""Words that open a filler reply; the head keeps `see you tomorrow, X` from counting as content."""
