"""Surface features of a user turn, computed over a whole column at once, for the realism measures.

The realism table asks how a simulated user's next turn differs from a real person's on the same
context. These features are what a reader can check by eye (length, questions, thanks, code, the
language, how much of the turn repeats the request or the answer), so that the discriminator's
strongest coefficients read as sentences ("longer", "more overlap with the question"). Every
function takes a pandas column and works with vectorised string methods and numpy: 50,000 turns
featurise in a few seconds on one core.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

ENGLISH_FUNCTION_WORDS: tuple[str, ...] = (
    "the", "and", "of", "to", "is", "that", "it", "for", "you", "with", "this", "are", "be", "have",
    "not", "what", "how", "can", "at", "by", "from", "but", "or", "they", "we", "she", "his", "her",
    "their", "there", "which", "would", "could", "should", "does", "did", "had", "been", "were", "if",
    "then", "than", "about", "into", "your", "my", "all", "any", "some", "more", "most", "other",
    "when", "where", "who", "why", "just", "like", "only", "very", "these", "those", "them", "our",
    "its", "because", "after", "before", "over", "under", "through", "between", "each", "such",
    "same", "both", "many", "much", "here", "now", "up", "out", "get", "make", "want", "need", "know",
    "give", "write", "please", "thanks", "thank", "i'm", "don't", "it's", "can't", "explain", "tell",
    "show", "help", "again", "still", "yes", "being", "while", "every", "without",
)
"""About 100 of the commonest English function and request words, leaving out those that are also
common words of other Latin-script languages ("a", "in", "no", "me", "de", "die", "was", "an", "so",
"on", "do", "he", "has", "am", "also", "as", "will"), so that finding one is evidence of English."""

_FUNCTION_WORD_PATTERN = r"\b(?:" + "|".join(ENGLISH_FUNCTION_WORDS) + r")\b"
_LETTER = r"[^\W\d_]"
_THANKS = r"\b(?:thanks|thank you|thank u|thx|many thanks|appreciate it)\b"
_CODE_LINE = (
    r"(?m)^\s*(?:def |class |import |from \S+ import |#include|public |private |function |const |let |var "
    r"|return\b|select .+ from |if ?\(|for ?\(|while ?\(|<\w+[^>]*>|\$ |>>> )"
    r"|(?m)[;{}]\s*$|```"
)
_IMPERATIVE_OPENING = (
    r"^\W*(?:please\s+)?(?:write|give|explain|tell|show|make|create|list|describe|summari[sz]e|translate"
    r"|rewrite|generate|provide|continue|add|change|fix|act as|can you|could you|would you|help)\b"
)
_POLITENESS = r"\b(?:please|pls|plz|sorry|apolog\w*|excuse me|kindly)\b"
_ASSISTANT_PHRASING = (
    r"(?:i'd be happy|i would be happy|let me know if|\bhere is\b|\bhere's\b|\bhere are\b|i hope this helps"
    r"|feel free to|\bcertainly[!,.]|of course[!,.]|great question|as an ai\b|i understand your)"
)
_FIRST_PERSON = r"\b(?:i|me|my|mine|myself|we|us|our|ours|i'm|i've|i'd|i'll)\b"
_SECOND_PERSON = r"\b(?:you|your|yours|yourself|u|you're|you've|you'll)\b"


@dataclass(frozen=True)
class SurfaceFeature:
    """One interpretable column of the discriminator's matrix, with the phrase for each sign.

    `more` reads as "the simulator has more of this" (positive coefficient), `fewer` as the
    opposite; `realism_table`'s `giveaways` are built from these phrases.
    """

    key: str
    more: str
    fewer: str


SURFACE_FEATURES: tuple[SurfaceFeature, ...] = (
    SurfaceFeature("log_words", "longer", "shorter"),
    SurfaceFeature("chars_per_word", "longer words", "shorter words"),
    SurfaceFeature("question_marks", "more questions", "fewer questions"),
    SurfaceFeature("thanks", "more thanks", "fewer thanks"),
    SurfaceFeature("code", "more code", "less code"),
    SurfaceFeature("non_english", "more non-English", "less non-English"),
    SurfaceFeature("starts_lowercase", "more lowercase starts", "fewer lowercase starts"),
    SurfaceFeature("ends_punctuation", "more final punctuation", "less final punctuation"),
    SurfaceFeature("newlines", "more line breaks", "fewer line breaks"),
    SurfaceFeature("answer_overlap", "more overlap with the answer", "less overlap with the answer"),
    SurfaceFeature("question_overlap", "more overlap with the question", "less overlap with the question"),
    SurfaceFeature("first_person", "more first person", "less first person"),
    SurfaceFeature("second_person", "more second person", "less second person"),
    SurfaceFeature("exclamations", "more exclamations", "fewer exclamations"),
    SurfaceFeature("digit_share", "more digits", "fewer digits"),
    SurfaceFeature("capital_share", "more capitals", "fewer capitals"),
    SurfaceFeature("imperative_opening", "more imperative openings", "fewer imperative openings"),
    SurfaceFeature("politeness", "more politeness", "less politeness"),
    SurfaceFeature("assistant_phrasing", "more assistant-style phrasing", "less assistant-style phrasing"),
)
"""The discriminator's features in column order; `log_words` with `chars_per_word` carry the
length in characters without two collinear length columns splitting one coefficient."""


def _text(texts: pd.Series) -> pd.Series:
    return texts.fillna("").astype(str)


def word_counts(texts: pd.Series) -> np.ndarray:
    """Whitespace-separated words per text (0 for an empty or missing text)."""
    return _text(texts).str.count(r"\S+").to_numpy(dtype=np.int64)


def has_question(texts: pd.Series) -> np.ndarray:
    """True where the text contains a question mark (ASCII or full-width)."""
    return _text(texts).str.contains(r"[?？]", regex=True).to_numpy(dtype=bool)


def has_thanks(texts: pd.Series) -> np.ndarray:
    """True where the text thanks ("thanks", "thank you", "thx", "appreciate it"), any case."""
    return _text(texts).str.lower().str.contains(_THANKS, regex=True).to_numpy(dtype=bool)


def has_code(texts: pd.Series) -> np.ndarray:
    """True where the text has a fenced block or a line that looks like code.

    A code line starts like a statement (`def `, `import `, `return`, `for (`, an HTML tag, a shell
    `$ ` or `>>> ` prompt, an SQL query) or ends with `;`, `{` or `}`. Prose that ends a line
    with a semicolon counts as code; code pasted inline in a sentence does not.
    """
    return _text(texts).str.lower().str.contains(_CODE_LINE, regex=True).to_numpy(dtype=bool)


def english_mask(texts: pd.Series) -> np.ndarray:
    """Vectorised `is_english`: True where a text reads as English by the documented heuristic."""
    text = _text(texts)
    lower = text.str.lower()
    letters = text.str.count(_LETTER).to_numpy(dtype=np.float64)
    ascii_letters = text.str.count(r"[A-Za-z]").to_numpy(dtype=np.float64)
    latin_script = ascii_letters >= 0.9 * letters
    long_enough = word_counts(text) >= 4
    function_word = lower.str.contains(_FUNCTION_WORD_PATTERN, regex=True).to_numpy(dtype=bool)
    code = has_code(text)
    return (letters == 0) | (latin_script & (~long_enough | function_word | code))


def is_english(text: str) -> bool:
    """Whether one user turn reads as English, by a fast heuristic (no language model, no new dependency).

    English when the text has no letters at all (numbers, symbols), or when at least 90 % of its
    letters are ASCII and, for texts of four words or more, it contains one of
    `ENGLISH_FUNCTION_WORDS` or looks like code. `langdetect` is installed but takes milliseconds
    per text, too slow for 50,000 turns; this runs at column speed.

    Known errors: Latin-script languages (Spanish, French, German, Indonesian...) are caught only by
    the function-word test, so a short one (under four words) or one that uses an English word
    ("ok", "please", a borrowed "like") counts as English; Dutch texts with "is" do too. A
    non-English request with a little accented text and much ASCII code counts as English. English
    with many accented names or emoji-free non-ASCII letters above 10 % counts as non-English.
    """
    return bool(english_mask(pd.Series([text]))[0])


def _tokens(texts: pd.Series) -> pd.Series:
    return _text(texts).str.lower().str.replace(r"[^\w']+", " ", regex=True).str.split()


def overlap_share(texts: pd.Series, others: pd.Series) -> np.ndarray:
    """For each row, the share of the text's words (with repeats) that also occur in `others` on that row.

    Words are lower-cased runs of letters, digits and apostrophes. The other side is deduplicated
    first (one copy of each distinct answer or question), and membership is one `np.isin` over
    integer keys, so long assistant answers shared by several turns cost once. 0 for an empty text.
    """
    n = len(texts)
    if n == 0:
        return np.zeros(0)
    other_codes, other_uniques = pd.factorize(_text(others).reset_index(drop=True))
    turn_words = _tokens(texts.reset_index(drop=True)).explode().dropna()
    other_words = _tokens(pd.Series(other_uniques, dtype=object)).explode().dropna()
    vocabulary_codes, _ = pd.factorize(pd.concat([turn_words, other_words], ignore_index=True))
    turn_codes = vocabulary_codes[: len(turn_words)].astype(np.int64)
    other_word_codes = vocabulary_codes[len(turn_words):].astype(np.int64)
    width = int(vocabulary_codes.max()) + 1 if len(vocabulary_codes) else 1
    rows = turn_words.index.to_numpy(dtype=np.int64)
    turn_keys = other_codes[rows].astype(np.int64) * width + turn_codes
    other_keys = other_words.index.to_numpy(dtype=np.int64) * width + other_word_codes
    found = np.isin(turn_keys, np.unique(other_keys))
    totals = np.bincount(rows, minlength=n)
    hits = np.bincount(rows, weights=found, minlength=n)
    return np.divide(hits, totals, out=np.zeros(n), where=totals > 0)


def _share(counts: np.ndarray, totals: np.ndarray) -> np.ndarray:
    return np.divide(counts, totals, out=np.zeros(len(counts)), where=totals > 0)


def feature_matrix(turns: pd.DataFrame) -> pd.DataFrame:
    """The discriminator's feature matrix: one row per turn, one column per `SURFACE_FEATURES` key, in order.

    Reads `text`, `answer` and `question`; the index follows `turns`. Counts enter as log1p so that
    one very long pasted turn does not dominate the standardised scale.
    """
    text = _text(turns["text"])
    lower = text.str.lower()
    stripped = text.str.strip()
    words = word_counts(text).astype(np.float64)
    chars = text.str.len().to_numpy(dtype=np.float64)
    letters = text.str.count(_LETTER).to_numpy(dtype=np.float64)

    def count(pattern: str, source: pd.Series = lower) -> np.ndarray:
        return source.str.count(pattern).to_numpy(dtype=np.float64)

    def contains(pattern: str, source: pd.Series = lower) -> np.ndarray:
        return source.str.contains(pattern, regex=True).to_numpy(dtype=np.float64)

    columns = {
        "log_words": np.log1p(words),
        "chars_per_word": _share(chars, words),
        "question_marks": np.log1p(count(r"[?？]")),
        "thanks": has_thanks(text).astype(np.float64),
        "code": has_code(text).astype(np.float64),
        "non_english": (~english_mask(text)).astype(np.float64),
        "starts_lowercase": contains(r"^\s*[a-z]", stripped),
        "ends_punctuation": contains(r"[.!?？。)\"']$", stripped),
        "newlines": np.log1p(count(r"\n")),
        "answer_overlap": overlap_share(text, turns["answer"]),
        "question_overlap": overlap_share(text, turns["question"]),
        "first_person": _share(count(_FIRST_PERSON), words),
        "second_person": _share(count(_SECOND_PERSON), words),
        "exclamations": np.log1p(count(r"!")),
        "digit_share": _share(count(r"\d"), chars),
        "capital_share": _share(count(r"[A-Z]", text), letters),
        "imperative_opening": contains(_IMPERATIVE_OPENING),
        "politeness": contains(_POLITENESS),
        "assistant_phrasing": contains(_ASSISTANT_PHRASING),
    }
    return pd.DataFrame({f.key: columns[f.key] for f in SURFACE_FEATURES}, index=turns.index)
