"""Phrases by which a user turn refers to the assistant's answer: the strongest follow-up cue.

Each group is a `Cue` with its own trigger words, so that a turn runs only the few patterns its
words make possible (one large alternation would be scanned whole for every turn). A phrase
counts only when the turn did not copy it from the question: "explain your answer" in a
restated instruction is not a reaction to the answer.
"""

from __future__ import annotations

import re

from testbed.judges.local.cues import Cue

_M = re.MULTILINE


def _ref(pattern: str, triggers: str) -> Cue:
    return Cue(re.compile(r"\b(?:" + pattern + ")", _M), frozenset(triggers.split()))


ANSWER_REFS: tuple[Cue, ...] = (
    _ref(
        r"you\s+(?:said|say|mentioned|wrote|stated|claimed|forgot|missed|used|got|made|calculated|computed|solved|provided"
        r"|gave|listed|described|suggested|assumed|meant|did\s+not|didn't|have\s+not|haven't|skipped|left\s+out|stopped"
        r"|(?!need\b|proceed\b|succeed\b|feed\b|speed\b)\w{2,}ed\b)"
        r"|your\s+(?:answer|response|reply|calculation|explanation|solution|math|result|list|story|poem|text|summary|example"
        r"|reasoning|last|previous|first|second|final)"
        r"|(?:why|how|where)\s+(?:did|do|would|were)\s+you|did\s+you\s+(?:mean|get|use|forget|include|consider|calculate|finish)"
        r"|are\s+you\s+sure|i\s+think\s+you|what\s+do\s+you\s+mean"
        r"|(?:can|could|would)\s+you\s+(?:please\s+)?(?:(?:explain|clarify|go\s+over|walk\s+me\s+through)\s+(?:this|that|it"
        r"|these|those|why|how\s+you|what\s+you|further|more|again|(?:the|your)\s+(?:answer|steps?|calculation|solution"
        r"|reasoning|last|first|second|third|final|result|example|text))"
        r"|clarify|elaborate|expand\s+on|rewrite|redo|shorten|simplify|double[- ]check|recheck|re-?calculate|fix|correct"
        r"|(?:add|remove|drop|replace|swap)\s+(?:a|an|one|another|the)\s+(?:\w+\s+)?(?:tip|point|item|step|example|line|sentence|paragraph|option)"
        r"|show\s+(?:me\s+)?(?:your|the)\s+(?:work|steps?|calculation)|break\s+(?:it|that|this)\s+down|make\s+it)",
        "you your",
    ),
    _ref(
        r"is\s+(?:that|this|it|\S+)\s+(?:really\s+)?(?:right|correct|accurate|true)\b"
        r"|i\s+(?:counted|calculated|computed|got|get)\s+(?:a\s+different|\$?\d)"
        r"|(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+(?:wrong|incorrect|not\s+(?:right|correct))"
        r"|(?:shouldn't|should)\s+it\s+be|(?:a|the|your)\s+mistake|does(?:n't|\s+not)\s+add\s+up",
        "right correct accurate true wrong incorrect should shouldn mistake add counted calculated computed got get",
    ),
    _ref(
        r"(?:in|at|of)\s+step\s+\d|step\s+\d+\s+(?:says|is|was|seems)"
        r"|the\s+(?:first|second|third|fourth|fifth|last|final|next|previous)\s+(?:step|point|item|idea|name|paragraph"
        r"|sentence|bullet|option|example|part|line|number|equation)",
        "step first second third fourth fifth last final next previous",
    ),
    _ref(
        r"cut\s+off|got\s+cut|did(?:n't|\s+not)\s+finish|unfinished|incomplete"
        r"|(?:finish|continue|complete)\s+(?:the|your|it|this)",
        "cut finish unfinished incomplete continue complete",
    ),
    _ref(
        r"(?:make|keep)\s+it\s+(?:shorter|longer|simpler|clearer|more|less|easier|funnier|formal|casual)"
        r"|(?:redo|rewrite|shorten|simplify|expand|fix|correct|recalculate|recheck|continue|finish)\s+"
        r"(?:it|this|that|the\s+(?:answer|list|story|text|calculation)|your)"
        r"|do\s+it\s+(?:again|for|with|without|in)|try\s+(?:again|once\s+more)"
        r"|(?:solve|calculate|compute|work\s+out|answer|write|explain)\s+(?:it|this|that)\s+again",
        "make keep redo rewrite shorten simplify expand fix correct recalculate recheck continue finish do try again",
    ),
    _ref(
        r"(?:in\s+)?simpler\s+terms|like\s+i'?m\s+(?:five|5|a\s+(?:child|kid|beginner))"
        r"|i\s+(?:don't|do\s+not|didn't|did\s+not)\s+(?:understand|get|follow)|i'm\s+(?:confused|lost)"
        r"|confus(?:ed|ing)\s+(?:by|about)|explain\s+(?:further|more|that|this|why|how\s+you)"
        r"|what\s+does\s+(?:that|this|it)\s+mean",
        "simpler five 5 child kid beginner understand get follow confused lost confusing explain mean",
    ),
    _ref(
        r"(?:the|this|that|your)\s+(?:answer|response|explanation|calculation|result)\s+(?:(?:is|was|seems|looks)\s+"
        r"(?:wrong|incorrect|right|correct|off|confusing|unclear|incomplete|too|not)\b|doesn't|does\s+not)",
        "answer response explanation calculation result",
    ),
    _ref(
        r"where\s+(?:did\s+(?:the|that|this)|(?:does|did)\s+(?:the|that|this|it)\s+(?:\S+\s+)?come\s+from)",
        "where",
    ),
    _ref(
        r"(?:solve|do|approach|answer)\s+(?:this|that|the)\s+(?:problem|question|task)\s+"
        r"(?:using|with|by|in|differently|another|algebraically)"
        r"|(?:different|another|other|alternative|simpler|easier|faster|better)\s+(?:approach|method|way\s+to\s+solve|solution)",
        "problem question task approach method solution solve",
    ),
    _ref(
        r"(?:more|further|additional)\s+(?:information|info|details?|examples)\b|tell\s+me\s+more|few\s+(?:more\s+)?examples\b"
        r"|(?:two|three|a\s+few|some|\d)\s+more\s+(?:\w+\s+)?(?:names|examples|options|ideas|tips|versions|ways)\b"
        r"|in\s+the\s+same\s+(?:style|way|format|tone)",
        "information info details detail examples tell few more same",
    ),
    _ref(
        r"(?:this|that)\s+(?:\w+\s+)?(?:concept|idea|approach|method|text|passage|story|list|example|explanation|solution"
        r"|calculation|trip)\b",
        "concept idea approach method text passage story list example explanation solution calculation trip",
    ),
)
"""Second-person and deictic references to the answer, questions about its steps, requests to redo it."""

NARRATIVE_REF = Cue(
    re.compile(
        r"\bthe\s+(?:main\s+|first\s+|second\s+|last\s+)?(?:characters?|protagonist|hero|heroine|narrator|villain|ending"
        r"|plot|moral|twist|opening\s+line|last\s+line|title)\b"
    ),
    frozenset(
        "character characters protagonist hero heroine narrator villain ending plot moral twist opening line title".split()
    ),
)
"""A definite reference to a part of a story ("the character who..."): when the answer is a story, it is that story."""

NARRATIVE_WORDS = frozenset("story stories poem screenplay script tale fable novel song lyrics dialogue".split())
"""Words of a request for a narrative: the answer is then a story its parts can be asked about."""


def refers_to_answer(window: str, words: set[str] | frozenset[str], question: str) -> bool:
    """True when `window` (lower-cased turn head) refers to the answer with a phrase not copied from `question`."""
    for cue in ANSWER_REFS:
        if cue.triggers.isdisjoint(words):
            continue
        for match in cue.pattern.finditer(window):
            if match.group(0) not in question:
                return True
    return False
