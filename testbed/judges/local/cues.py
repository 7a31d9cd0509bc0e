"""Precompiled phrase cues for the local classifier: each pattern names one behaviour of a user turn.

Compiled once at import so that judging a turn costs only `search` calls; every pattern is
anchored on wording that a user or an assistant would actually write, not on any dataset's ids.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE
_IM = re.IGNORECASE | re.MULTILINE

WORD = re.compile(r"\w+")
"""Word tokens (letters, digits, underscore, any script); the text is lower-cased first."""

STRONG_TEMPLATE = re.compile(
    r"<\|[a-z_ ]{2,24}\|>|\[/?INST\]|</?s>|<</?SYS>>|<start_of_turn>|<end_of_turn>|<\|?endoftext\|?>",
    _I,
)
"""Chat-template control tokens that no human types: their presence is leakage, not content."""

ROLE_LINE = re.compile(r"^\s*(?:user|assistant|system|human|model)\s*$", _IM)
"""A bare role name on its own line, what a template leaves behind when its tokens are decoded."""

ROLE_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:user|human|me)\s*:\s*", _I)
"""A leading `User:` speaker tag; stripped so that the rest of the turn is judged on its content."""

ASSISTANT_PREFIX = re.compile(r"^\s*(?:assistant|ai|bot|gpt|model)\s*:", _IM)
"""A line that begins with an assistant speaker tag: the turn speaks (or scripts) the assistant."""

GLUED_ROLE = re.compile(r"[?.!:a-z](?:response|assistant|completion|system)\n|SetActive|\w\.inessett", _I)
"""Role or channel words glued onto the previous token, a decoding artefact of small models."""

USER_NEXT = re.compile(
    r"(?:sure[,!]?\s*)?(?:here(?:'s| is)\s+)?(?:the\s+)?user(?:'s|s)?\s+next\s+message(?:\s+is)?(?:\s+done)?\s*[:.]?"
    r"|now\s+you\s+are\s+the\s+user\.?(?:\s*write\s+the\s+user's\s+next\s+message\s+only\.?)?",
    _I,
)
"""Scaffolding echoed from the role-play instruction; removed before judging what remains."""

PLANNING = re.compile(
    r"^\s*(?:okay|ok|alright|so|hmm+)?[,.]?\s*(?:first(?:ly)?,?\s+)?(?:i\s+(?:need|have|want|should|must|will)\s+to\s+"
    r"(?:figure|find|determine|consider|think|understand|analy[sz]e|work|check|respond|reply|write|answer|come up)"
    r"|let\s+me\s+(?:think|analy[sz]e|start|break|consider|figure|see|first|work|check|re-?read|look|recall|parse)"
    r"|let's\s+(?:think|analy[sz]e|break\s+down\s+the\s+(?:request|conversation|task))"
    r"|the\s+user\s+(?:wants|is\s+asking|asked|needs|has\s+asked|would\s+like|is\s+looking|requests|'s\s+(?:request|question))"
    r"|i(?:'m|\s+am)\s+(?:currently\s+)?(?:thinking|planning|considering|going\s+to\s+(?:think|plan|analy))"
    r"|my\s+(?:plan|approach|task)\s+(?:is|will)"
    r"|(?:thinking|analysis|plan|reasoning)\s*:)"
    r"|<think>|\bchannel\|?>?\s*analysis",
    _IM,
)
"""Thinking aloud about how to respond, at the start of a line: the model plans instead of speaking."""

SELF_META = re.compile(r"\b(?:simulation\s+mode|as\s+the\s+(?:simulated\s+)?user,?\s+i|i\s+am\s+(?:now\s+)?the\s+user)\b", _I)
"""The writer describes its own role or state instead of speaking in it."""

OFFER = re.compile(
    r"\b(?:i(?:'m|\s+am)\s+(?:glad|happy|here|ready|delighted)\s+to\s+(?:help|assist)"
    r"|i(?:'m|\s+am)\s+here\s+to\s+(?:help|assist)"
    r"|(?:how|what)\s+can\s+i\s+(?:help|assist|do\s+for\s+you|do\s+to)"
    r"|is\s+there\s+anything\s+else\s+(?:you|i)"
    r"|(?:was\s+there\s+)?anything\s+else\s+i\s+(?:could|can)\s+help"
    r"|let\s+me\s+know\s+if|feel\s+free\s+to\s+ask|please\s+ask\s+me"
    r"|i\s+hope\s+(?:this|that)\s+helps"
    r"|(?:do|would)\s+you\s+(?:want|like)\s+me\s+to"
    r"|was\s+(?:it|this|that)\s+helpful"
    r"|i(?:'m|\s+am)\s+sorry,?\s+but\s+i\s+(?:can(?:'|no)t|am\s+unable)"
    r"|as\s+an\s+ai\b|i(?:'m|\s+am)\s+an\s+ai\b"
    r"|what(?:'s|\s+is)\s+your\s+next\s+question"
    r"|(?:^|\n)\s*sure[!,.]\s+here(?:'s|\s+is)"
    r"|(?:^|\n)\s*certainly[!,.]\s+)",
    _I,
)
"""Assistant-style offers, refusals and self-descriptions: the model still speaks as the assistant."""

SOLVING = re.compile(
    r"\b(?:to\s+(?:solve|find|determine|calculate|answer)\s+(?:this|the)\b[^.?!\n]{0,40},?\s+we\s+(?:need|have|can|must)"
    r"|here(?:'s|\s+is)\s+(?:a|the)\s+step[- ]by[- ]step"
    r"|step\s+1\s*:|####\s*\d|the\s+(?:final\s+)?answer\s+is\b"
    r"|therefore,\s+the\s+answer|so,?\s+the\s+answer\s+is)",
    _I,
)
"""The turn solves or answers the task itself, as an assistant would."""

ANSWER_REF = re.compile(
    r"\b(?:you\s+(?:said|say|mentioned|wrote|stated|claimed|forgot|missed|used|got|made|calculated|computed|solved|provided|gave|listed|described|suggested|assumed|meant|did\s+not|didn't|have\s+not|haven't|skipped|left\s+out|stopped)"
    r"|your\s+(?:answer|response|reply|calculation|explanation|solution|math|result|list|story|poem|text|summary|example|reasoning|last|previous|first|second|final)"
    r"|(?:why|how)\s+did\s+you|did\s+you\s+(?:mean|get|use|forget|include|consider|calculate|finish)"
    r"|are\s+you\s+sure|is\s+(?:that|this|it)\s+(?:right|correct|accurate|true)\??$"
    r"|(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+(?:wrong|incorrect|not\s+(?:right|correct))"
    r"|(?:shouldn't|should)\s+it\s+be|i\s+think\s+you|(?:a|the|your)\s+mistake|doesn't\s+add\s+up|does\s+not\s+add\s+up"
    r"|(?:in|at|of)\s+step\s+\d|step\s+\d+\s+(?:says|is|was|seems)|the\s+(?:first|second|third|fourth|last|final|next)\s+step"
    r"|cut\s+off|got\s+cut|didn't\s+finish|did\s+not\s+finish|unfinished|incomplete|(?:please\s+)?(?:finish|continue|complete)\s+(?:the|your|it|this)"
    r"|(?:can|could|would)\s+you\s+(?:please\s+)?(?:explain|clarify|elaborate|expand|rewrite|redo|shorten|simplify|double[- ]check|recheck|re-?calculate|fix|correct|show\s+(?:me\s+)?(?:how|the|your)|go\s+(?:over|through)|break\s+(?:it|that|this)\s+down|make\s+it)"
    r"|explain\s+(?:further|more|that|this|why|how\s+you)|what\s+do\s+you\s+mean|what\s+does\s+(?:that|this|it)\s+mean"
    r"|(?:the|this|that)\s+(?:answer|response|explanation|calculation|result)\s+(?:is|was|seems|looks|doesn't|does)"
    r"|where\s+did\s+(?:the|that|this|you)|where\s+does\s+(?:the|that|this)\s+\S+\s+come\s+from"
    r"|(?:solve|do|approach|answer)\s+(?:this|that|the)\s+(?:problem|question|task)\s+(?:using|with|by|in|differently|another|algebraically|differently)"
    r"|(?:different|another|other|alternative|simpler|easier|faster|better)\s+(?:approach|method|way\s+to\s+solve|solution)"
    r"|(?:more|further|additional)\s+(?:information|info|details|detail|examples)|tell\s+me\s+more|(?:a\s+)?few\s+(?:more\s+)?examples"
    r"|(?:this|that|the\s+same)\s+(?:concept|idea|approach|method|text|passage|story|list|example|explanation|solution|calculation|trip)\b)",
    _IM,
)
"""Second-person references to the answer: the user talks about what the assistant said."""

GENERIC_ASK = re.compile(
    r"^\s*(?:\d+\.\s*)?(?:what(?:'s|\s+is|\s+are)\s+(?:the|some)\s+(?:best|most\s+\w+|main|key|top)\s+(?:way|ways|thing|things|part|tips?|steps?|advice|factors?)"
    r"|what\s+is\s+the\s+probability|how\s+(?:do|can|should)\s+i\s+(?:write|make|improve|prepare|learn|start|become|find|get)"
    r"|(?:can|could)\s+you\s+help\s+me\s+(?:with|find|write|make|to)|i(?:'m|\s+am)\s+looking\s+for\s+(?:a|an|some)\b)",
    _I,
)
"""A generic advice or textbook question that stands on its own, whatever the answer said."""

VARIANT = re.compile(
    r"\b(?:if|suppose|supposing|what\s+if|assuming)\b[^?.]{0,80}?\b(?:one|two|\d+)\s+(?:additional|more|extra|fewer|less)\b"
    r"|\b(?:if|suppose|what\s+if)\b[^?.]{0,80}?\binstead\b|\bone\s+additional\b",
    _I,
)
"""A variant of the problem ("if one additional tub were sold instead"): a new problem, not a reaction."""

INVITATION = re.compile(r"(?:any\s+(?:other\s+|more\s+|further\s+)?questions|what\s+do\s+you\s+think|anything\s+else)\??\s*$", _I)
"""An answer that ends by inviting the user's questions; what follows is likelier a follow-up."""

QUESTION_OPENER = re.compile(
    r"^\s*(?:what|what's|how|why|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|could|would|will|should|shall|may|might|has|have|had|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|couldn't|shouldn't)\b",
    _I,
)
"""An interrogative first word: the turn is shaped as a question even without a question mark."""

REQUEST_OPENER = re.compile(
    r"^\s*(?:please\s+)?(?:tell|give|show|explain|describe|list|write|create|generate|make|provide|help|summari[sz]e|translate|compare|find|calculate|solve|compute|suggest|recommend|i\s+(?:want|need|would\s+like)|i'd\s+like|i'm\s+looking)\b",
    _I,
)
"""An imperative or request opener: the turn asks for something, as a new or repeated task does."""

FILLER_WORDS = frozenset(
    "thanks thank you thx ty ok okay k great got it cool nice perfect sounds good see next time tomorrow later soon "
    "bye goodbye awesome appreciate appreciated alright all right sure yes yeah yep no nope hmm wow lol fine "
    "very much a lot so understood i see that helps helped makes sense wonderful excellent amazing gotcha right "
    "have day night well done again for the this that was is it's you too".split()
)
"""Words of a contentless reply; a short turn made only of these is filler."""

FILLER_HEAD = frozenset("thanks thank ok okay great got cool nice perfect see bye goodbye awesome alright sure yes no wow fine understood wonderful excellent amazing gotcha appreciate".split())
"""Words that open a filler reply; the head keeps `see you tomorrow, X` from counting as content."""
