"""Text features of one user turn, measured against the question and the answer as shown.

Overlap is measured on content words (stop words removed, plurals folded) and on word trigrams:
word sets generalise across paraphrase, trigram containment tells copying from paraphrasing.
The question/answer side is computed once per pair and cached, because every turn of a probe
shares its question and answer with several others.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from testbed.judges.local import cues

A_TEXT_CHARS = 6000
"""Characters of the answer searched for word fragments (bounds the cost of substring checks)."""

MAX_WORDS = 400
"""Words of a turn that are measured; the head of a long turn already shows its behaviour."""

STOP = frozenset(
    "a an the and or but if then so of to in on at by for with from into onto over under about as is are was were be "
    "been being am do does did doing have has had having i me my mine we us our you your yours he him his she her it "
    "its they them their this that these those there here what which who whom whose when where why how can could "
    "would should will shall may might must not no nor too very just also than such only own same other some any each "
    "all both few more most s t d ll m re ve don doesn didn isn aren wasn weren won let lets let's it's i'm that's "
    "what's up out one get got make made please tell give know like need want much many well really after before "
    "during while since until again per each every now then still even".split()
)
"""Function words that carry no topic; overlap on them says nothing about what a turn reacts to."""

FRAME = frozenset(
    "total number amount difference between way ways best most effective important thing things answer question "
    "possible successfully possibly explain describe provide list kind type sort exactly actually".split()
)
"""Words that frame a question rather than name its topic (`what is the total number of ...`)."""

IGNORED = STOP | FRAME


def _fold(word: str) -> str:
    """A crude singular, so that `fairies`/`fairie` and `jar`/`jars` meet."""
    return word[:-1] if len(word) > 3 and word[-1] == "s" and word[-2] != "s" else word


def content_words(words: list[str]) -> frozenset[str]:
    """The topical words of a token list, plural-folded."""
    return frozenset(_fold(w) for w in words if w not in IGNORED and (len(w) > 1 or w.isdigit()))


def trigrams(words: list[str]) -> set[tuple[str, str, str]]:
    """Word trigrams, the unit of verbatim copying."""
    return set(zip(words, words[1:], words[2:]))


class Context(NamedTuple):
    """What a turn is compared against: the question's and the answer's words and trigrams."""

    q_content: frozenset[str]
    a_content: frozenset[str]
    a_only: frozenset[str]
    q_tri: frozenset[tuple[str, str, str]]
    a_tri: frozenset[tuple[str, str, str]]
    a_numbers: frozenset[str]
    ask: frozenset[str]
    a_text: str
    q_text: str
    a_weight: dict[str, float]
    invited: bool
    q_latin: bool


def _latin_share(text: str) -> float:
    """Share of letters that are ASCII; tells a turn in another script from the request's language."""
    letters = [c for c in text[:400] if c.isalpha()]
    if not letters:
        return 1.0
    return sum(1 for c in letters if c < "\x80") / len(letters)


def _ask(question: str) -> str:
    """The sentence that carries the request: the last one with a question mark, else the first.

    Word problems state facts and then ask; instructions ask first and add constraints after.
    """
    sentences = [s for s in _SENTENCE_SPLIT.split(question) if s.strip()]
    if not sentences:
        return ""
    asked = [s for s in sentences if s.rstrip().endswith("?")]
    return asked[-1] if asked else sentences[0]


_SENTENCE_SPLIT = re.compile(r"(?<=[.?!])\s+")


def _weights(words: list[str]) -> dict[str, float]:
    """log(1 + count) of each content word of the answer: how much the answer dwells on it."""
    counts: dict[str, int] = {}
    for w in words:
        if w not in IGNORED and (len(w) > 1 or w.isdigit()):
            w = _fold(w)
            counts[w] = counts.get(w, 0) + 1
    return {w: math.log1p(n) for w, n in counts.items()}


@lru_cache(maxsize=512)
def context(question: str, assistant: str) -> Context:
    """Features of the (question, answer) pair, cached: many turns share one pair."""
    q_words = cues.WORD.findall(question.lower())
    a_words = cues.WORD.findall(assistant.lower())
    q_content = content_words(q_words)
    a_content = content_words(a_words)
    ask_words = cues.WORD.findall(_ask(question).lower())
    numbers = frozenset(w for w in a_words if w.isdigit()) - frozenset(w for w in q_words if w.isdigit())
    return Context(
        q_content=q_content,
        a_content=a_content,
        a_only=a_content - q_content,
        q_tri=frozenset(trigrams(q_words)),
        a_tri=frozenset(trigrams(a_words)),
        a_numbers=numbers,
        ask=content_words(ask_words),

        a_text=assistant.lower()[:A_TEXT_CHARS],
        a_weight=_weights(a_words),
        q_text=question.lower()[:A_TEXT_CHARS],
        invited=bool(cues.INVITATION.search(assistant[-200:])),
        q_latin=_latin_share(question) > 0.8,
    )


@dataclass(slots=True)
class TurnFeatures:
    """Everything the rules read about one turn; fractions are in [0, 1], counts are raw."""

    text: str
    n_chars: int
    n_words: int
    n_content: int
    q_frac: float
    a_frac: float
    a_only_frac: float
    novel_frac: float
    q_cover: float
    tri_q: float
    tri_a: float
    rep3: float
    dup_lines: float
    top_share: float
    question: bool
    qmarks: int
    request: bool
    latin: float
    odd_tokens: int
    answer_numbers: int
    first_sentence_q: float
    first_sentence_a: float
    ask_frac: float
    ask_cover: float
    invited: bool
    salience: float


def _repetition(words: list[str], tri: set) -> tuple[float, float]:
    """Share of repeated trigrams, and the share of the commonest content word: loop detectors."""
    n_tri = len(words) - 2
    rep3 = 1.0 - len(tri) / n_tri if n_tri >= 6 else 0.0
    counts: dict[str, int] = {}
    for w in words:
        if w not in STOP:
            counts[w] = counts.get(w, 0) + 1
    top = max(counts.values()) / len(words) if counts and len(words) >= 12 else 0.0
    return rep3, top


def _dup_lines(text: str) -> float:
    """Share of non-empty lines (or sentences, for one-line text) that repeat an earlier one."""
    parts = [p.strip() for p in text.replace("\n", ". ").split(". ")]
    parts = [p for p in parts if len(p) > 3]
    if len(parts) < 3:
        return 0.0
    return 1.0 - len(set(parts)) / len(parts)


def _odd_tokens(text: str) -> int:
    """Tokens no writer produces: camelCase joins, letters fused with digits, dotted fragments, caps runs."""
    odd = 0
    for tok in text.split():
        core = tok.strip(".,;:!?\"'()[]*«»“”")
        if len(core) < 4:
            continue
        if core.isalpha():
            if len(core) > 14 and core.isupper():
                odd += 1
            elif not core.islower() and not core.isupper() and not core.istitle() and any(c.isupper() for c in core[1:]):
                odd += 1
        elif core.isalnum():
            if any(c.isdigit() for c in core) and any(c.isalpha() for c in core) and not core[:-2].isdigit():
                odd += 1
        elif "." in core[1:-1] and "/" not in core[:8] and not any(c.isdigit() for c in core):
            odd += 1
    return odd


def _first_sentence(text: str) -> str:
    """The turn up to its first sentence end: where a reply states what it is doing."""
    cut = len(text)
    for mark in ("?", ".", "!", "\n"):
        i = text.find(mark, 12)
        if 0 <= i < cut:
            cut = i
    return text[:cut]


def _overlap(words: set | frozenset, ref: frozenset) -> float:
    """Share of `words` that also occur in `ref` (0 when there are none)."""
    return len(words & ref) / len(words) if words else 0.0


def measure(text: str, ctx: Context) -> TurnFeatures:
    """All features of the (already neutralised) turn `text` against `ctx`."""
    lower = text.lower()
    words = cues.WORD.findall(lower)
    n_words = len(words)
    head = words[:MAX_WORDS]
    content = content_words(head)
    n_content = len(content)
    tri = trigrams(head)
    rep3, top_share = _repetition(head, tri)
    first = content_words(cues.WORD.findall(_first_sentence(lower)))
    q_hits = content & ctx.q_content
    a_hits = content & ctx.a_content
    novel = content - q_hits - a_hits
    fragments = {w for w in novel if len(w) >= 5 and w in ctx.a_text} if novel and n_words < 60 else set()
    a_only = len(content & ctx.a_only) + len(fragments)
    return TurnFeatures(
        text=text,
        n_chars=len(text),
        n_words=n_words,
        n_content=n_content,
        q_frac=len(q_hits) / n_content if n_content else 0.0,
        a_frac=(len(a_hits) + len(fragments)) / n_content if n_content else 0.0,
        a_only_frac=a_only / n_content if n_content else 0.0,
        novel_frac=(len(novel) - len(fragments)) / n_content if n_content else 0.0,
        q_cover=len(q_hits) / len(ctx.q_content) if ctx.q_content else 0.0,
        tri_q=len(tri & ctx.q_tri) / len(tri) if tri else 0.0,
        tri_a=len(tri & ctx.a_tri) / len(tri) if tri else 0.0,
        rep3=rep3,
        dup_lines=_dup_lines(text),
        top_share=top_share,
        question=bool(cues.QUESTION_OPENER.match(text)) or "?" in text[:300],
        qmarks=text.count("?"),
        request=bool(cues.REQUEST_OPENER.match(text)),
        latin=_latin_share(text),
        odd_tokens=_odd_tokens(text),
        answer_numbers=sum(1 for w in set(head) if w in ctx.a_numbers),
        first_sentence_q=_overlap(first, ctx.q_content),
        first_sentence_a=_overlap(first, ctx.a_content),
        ask_frac=_overlap(content, ctx.ask),
        ask_cover=len(content & ctx.ask) / len(ctx.ask) if ctx.ask else 0.0,
        invited=ctx.invited,
        salience=sum(ctx.a_weight.get(w, 0.0) for w in content) / n_content if n_content else 0.0,
    )
