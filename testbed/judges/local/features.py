"""Text features of one user turn, measured against the question and the answer as shown.

Overlap is measured on content words (stop and frame words removed, singular and plural meeting)
and on word trigrams: word sets generalise across paraphrase, trigram containment tells copying
from paraphrasing. The question/answer side is computed once per pair and cached, because every
turn of a probe shares its question and answer with several others; the turn side is built from
C-implemented set, dict and string operations, so that a turn costs tens of microseconds.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from testbed.judges.local import cues
from testbed.judges.local.references import NARRATIVE_WORDS

MAX_WORDS = 200
"""Words of a turn that are measured; the head of a long turn already shows its behaviour."""

SHORT_TURN = 40
"""Turns shorter than this (in words) are searched for answer fragments: only they can be questions."""

FRAGMENT_CHECKS = 3
"""New words of a turn (the longest) looked up inside the answer's words, e.g. part of a compound."""

STOP = frozenset(
    "a an the and or but if then so of to in on at by for with from into onto over under about as is are was were be "
    "been being am do does did doing have has had having i me my mine we us our you your yours he him his she her it "
    "its they them their this that these those there here what which who whom whose when where why how can could "
    "would should will shall may might must not no nor too very just also than such only own same other some any each "
    "all both few more most s t d ll m re ve don doesn didn isn aren wasn weren won let lets up out one get got make "
    "made please tell give know like need want much many well really after before during while since until again per "
    "every now then still even".split()
)
"""Function words that carry no topic; overlap on them says nothing about what a turn reacts to."""

FRAME = frozenset(
    "total number amount difference between way ways best most effective important thing things answer question "
    "possible successfully possibly explain describe provide list kind type sort exactly actually".split()
)
"""Words that frame a question rather than name its topic (`what is the total number of ...`)."""

IGNORED = STOP | FRAME | frozenset("abcdefghijklmnopqrstuvwxyz")
"""Everything that is not a content word: stop words, frame words and single letters."""

_SENTENCE_SPLIT = re.compile(r"(?<=[.?!])\s+")


def _fold(word: str) -> str:
    """A crude singular: `jars` -> `jar`, `glass` stays."""
    return word[:-1] if len(word) > 3 and word[-1] == "s" and word[-2] != "s" else word


def reference_words(words: list[str]) -> frozenset[str]:
    """The topical words of a reference text, each with its plural/singular twin added.

    Expanding the reference (computed once per question and answer) lets a turn be compared
    with plain set operations, without folding the turn's words one by one.
    """
    base = set(words).difference(IGNORED)
    return frozenset(base | {_fold(w) for w in base} | {w + "s" for w in base if w[-1] != "s"})


def trigrams(words: list[str]) -> set[int]:
    """Word trigrams, the unit of verbatim copying, as their hashes.

    Hashing once turns every later set operation into integer comparisons; a collision between
    two different trigrams (one in 2**64) is of no consequence to a share of copied trigrams.
    """
    return set(map(hash, zip(words, words[1:], words[2:])))


class Context(NamedTuple):
    """What a turn is compared against, derived once from the question and the answer.

    Topical word sets (`q_content`, `a_content`, `a_only`: in the answer and not the question,
    `ask`: the request sentence, with `ask_size` its distinct words), trigram hashes, numbers
    new in the answer, the answer's long words as one string (for fragments), the question's
    text (to tell copied phrases), per-word weights, whether the question is in Latin script and
    whether it asks for a narrative.
    """

    q_content: frozenset[str]
    a_content: frozenset[str]
    a_only: frozenset[str]
    q_tri: frozenset[int]
    a_tri: frozenset[int]
    a_numbers: frozenset[str]
    ask: frozenset[str]
    ask_size: int
    a_vocab: str
    q_text: str
    a_weight: dict[str, float]
    q_weight: dict[str, float]
    q_latin: bool
    narrative: bool


def _ask(question: str) -> str:
    """The sentence that carries the request: the last one with a question mark, else the first.

    Word problems state facts and then ask; instructions ask first and add constraints after.
    """
    sentences = [s for s in _SENTENCE_SPLIT.split(question) if s.strip()]
    if not sentences:
        return ""
    asked = [s for s in sentences if s.rstrip().endswith("?")]
    return asked[-1] if asked else sentences[0]


def _weights(words: list[str]) -> dict[str, float]:
    """log(1 + count) of each topical word of a text, under both its forms: how much the text dwells on it."""
    counts = Counter(_fold(w) for w in words if w not in IGNORED)
    weights = {w: math.log1p(n) for w, n in counts.items()}
    weights.update({w + "s": v for w, v in weights.items() if w[-1] != "s"})
    return weights


@lru_cache(maxsize=2048)
def context(question: str, assistant: str) -> Context:
    """Features of the (question, answer) pair, cached: many turns share one pair."""
    q_words = cues.tokens(question.lower())
    a_words = cues.tokens(assistant.lower())
    q_content = reference_words(q_words)
    a_content = reference_words(a_words)
    ask_words = cues.tokens(_ask(question).lower())
    numbers = frozenset(w for w in a_words if w.isdigit()) - frozenset(w for w in q_words if w.isdigit())
    return Context(
        q_content=q_content,
        a_content=a_content,
        a_only=a_content - q_content,
        q_tri=frozenset(trigrams(q_words)),
        a_tri=frozenset(trigrams(a_words)),
        a_numbers=numbers,
        ask=reference_words(ask_words),
        ask_size=len(set(map(_fold, set(ask_words).difference(IGNORED)))),
        a_vocab=" ".join(sorted({w for w in a_words if len(w) >= 5})),
        q_text=question.lower(),
        a_weight=_weights(a_words),
        q_weight=_weights(q_words),
        q_latin=_latin_share(question, q_words) > 0.8,
        narrative=not NARRATIVE_WORDS.isdisjoint(q_words),
    )


@dataclass(slots=True)
class TurnFeatures:
    """What every rule may read about one turn; fractions are in [0, 1], counts are raw.

    `q_frac` and `a_frac` are the shares of the turn's content words found in the question and
    in the answer; `tri_q` and `tri_a` the shares of its word trigrams copied from them; `rep3`
    the share of its own trigrams that repeat (a loop). `question` / `request`: shaped as a
    question (question mark or interrogative opener) / as a request (imperative opener).
    `latin`: share of ASCII word characters. `answer_numbers`: numbers it takes from the answer
    that the question did not have.
    """

    text: str
    lower: str
    words: set[str]
    content: set[str]
    n_words: int
    q_frac: float
    a_frac: float
    tri_q: float
    tri_a: float
    rep3: float
    question: bool
    request: bool
    latin: float
    answer_numbers: int


class Origin(NamedTuple):
    """Where a question-like turn's words come from, measured only for such turns.

    Shares of the content words found only in the answer (`a_only_frac`, counting fragments of
    answer words such as a quoted part of a long word) or in neither text (`novel_frac`); the
    share of the question's request sentence that the turn covers (`ask_cover`); and `dwell`, the
    mean over the turn's words of how much more the answer repeats them than the question does
    (log counts): high when the turn picks up what the answer dwells on, low for words the answer
    only mentions or that merely come from the question.
    """

    a_only_frac: float
    novel_frac: float
    ask_cover: float
    dwell: float


def _latin_share(text: str, words: list[str]) -> float:
    """Share of word characters that are ASCII; tells a turn in another script from the request's language."""
    if text.isascii():
        return 1.0
    joined = "".join(words)
    return len(joined.encode("ascii", "ignore")) / len(joined) if joined else 1.0


def measure(
    text: str, ctx: Context, tokens: list[str] | None = None, token_set: set[str] | None = None, lower: str | None = None
) -> TurnFeatures:
    """The features of the (already neutralised) turn `text` against `ctx`.

    `tokens` (and their set) and `lower` are the word tokens and lower-cased form of `text` when
    the caller already has them.
    """
    if lower is None:
        lower = text.lower()
    all_words = cues.tokens(lower) if tokens is None else tokens
    n_words = len(all_words)
    head = all_words if n_words <= MAX_WORDS else all_words[:MAX_WORDS]
    words = token_set if token_set is not None and head is all_words else set(head)
    content = words.difference(IGNORED)
    n = len(content) or 1
    tri = trigrams(head)
    n_tri = len(tri) or 1
    return TurnFeatures(
        text=text,
        lower=lower,
        words=words,
        content=content,
        n_words=n_words,
        q_frac=len(content & ctx.q_content) / n,
        a_frac=len(content & ctx.a_content) / n,
        tri_q=len(tri & ctx.q_tri) / n_tri,
        tri_a=len(tri & ctx.a_tri) / n_tri,
        rep3=1.0 - len(tri) / (len(head) - 2) if len(head) >= 12 else 0.0,
        question="?" in text[:300] or cues.QUESTION_OPENER.match(lower) is not None,
        request=cues.REQUEST_OPENER.match(lower) is not None,
        latin=_latin_share(text, head),
        answer_numbers=len(ctx.a_numbers & words),
    )


def origin(f: TurnFeatures, ctx: Context) -> Origin:
    """Where the turn's content words come from (see `Origin`)."""
    content = f.content
    n = len(content) or 1
    novel = content.difference(ctx.q_content, ctx.a_content)
    fragments = 0
    if novel and f.n_words < SHORT_TURN:
        fragments = sum(1 for w in sorted(novel, key=lambda w: (-len(w), w))[:FRAGMENT_CHECKS] if len(w) >= 5 and w in ctx.a_vocab)
    weight, q_weight = ctx.a_weight, ctx.q_weight
    return Origin(
        a_only_frac=(len(content & ctx.a_only) + fragments) / n,
        novel_frac=(len(novel) - fragments) / n,
        ask_cover=min(1.0, len(content & ctx.ask) / ctx.ask_size) if ctx.ask_size else 0.0,
        dwell=sum([max(0.0, weight[w] - q_weight.get(w, 0.0)) for w in sorted(content & weight.keys())]) / n,
    )
