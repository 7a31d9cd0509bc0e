"""Is a text English? A documented heuristic, with no model and no dependency, for selecting real conversations.

A text is English when at least 90 % of its letters are ASCII letters and, once it has four words or
more, at least one of its words is among the common English function words below. Texts with no
letters at all (code, numbers, symbols) count as English: they carry no language to filter on.

Known errors: a Latin-script language written with no accents and using none of these words in a
long text is caught by the word test, but a short one (under four words, "hola amigo") passes as
English; English written mostly in another script's letters (a quoted Cyrillic name in a long
English sentence) can fail the letter test. Measured by eye on the shipped ShareGPT file, both are rare.
"""

from __future__ import annotations

import re

ENGLISH_WORDS = frozenset("""
the be to of and a in that have i it for not on with he as you do at this but his by from they we say her
she or an will my one all would there their what so up out if about who get which go me when make can like
time no just him know take people into year your good some could them see other than then now look only come
its over think also back after use two how our work first well way even new want because any these give day
most us is are was were has had been does did am please thanks thank write explain why where
""".split())
"""Common English function words (and the words of requests): a long English text holds at least one."""

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
MIN_WORDS_FOR_WORD_TEST = 4
ASCII_SHARE = 0.9


def is_english(text: str) -> bool:
    """Whether `text` reads as English by the module's heuristic (letters mostly ASCII, a common English word)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    ascii_letters = sum(1 for c in letters if c.isascii())
    if ascii_letters / len(letters) < ASCII_SHARE:
        return False
    words = [w.casefold() for w in _WORD.findall(text)]
    return len(words) < MIN_WORDS_FOR_WORD_TEST or any(w in ENGLISH_WORDS for w in words)
