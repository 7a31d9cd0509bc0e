"""Task accuracy of one assistant answer: right (1.0), wrong (0.0) or unscorable (`None`).

`None` exists because some answers cannot be judged automatically here (HealthBench needs a
rubric grader; a few instruction checks need NLTK data). Aggregates must drop `None`, never count
it as wrong, or accuracy would depend on what the machine happens to have installed. Each
dataset's scorer lives in its entry (`testbed.datasets.catalog`); the answer extraction they share
lives here.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from testbed.datasets.catalog import DATASETS
from testbed.datasets.items import DatasetItem

_NUMBER = re.compile(r"(?P<sign>-)?\$?(?P<digits>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?P<frac>\.\d+)?")
_GSM8K_MARKER = re.compile(r"####|answer\s+is|answer\s*:", re.IGNORECASE)

_LETTER_AFTER_ANSWER = re.compile(
    r"(?i:answer)(?:\s+(?i:is))?\s*[:=]?\s*[*_\s]*(?:\\boxed\{|\\text\{)?[(\[]?(?P<l>[A-D])\b"
)
_LETTER_IN_PARENS = re.compile(r"\((?P<l>[A-D])\)")
_LONE_LETTER = re.compile(r"[\s*_(\[]*(?P<l>[A-D])[\s*_)\].:]*")
_STANDALONE_LETTER = re.compile(r"\b(?P<l>[A-D])\b")


def score_answer(item: DatasetItem, answer: str) -> float | None:
    """Score an assistant answer against the item's reference, with the scorer its dataset's entry declares.

    Args:
        item: A benchmark item from `load_items` (or a synthetic one with the same reference).
        answer: The assistant's full reply.

    Returns:
        1.0 if correct, 0.0 if not (including when no answer can be found in the reply), or
        `None` when correctness cannot be decided offline: HealthBench always, IFEval/IFBench
        items with an instruction that needs missing NLTK data, an item without a reference, or
        an item of a dataset no entry is registered for.
    """
    if item.dataset not in DATASETS:
        return None
    return DATASETS.entry(item.dataset).score(item, answer)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")
"""Where the sentence that states the answer ends (a decimal point is followed by a digit, not space)."""


def strip_thinking(text: str) -> str:
    """Drop a reasoning block (`<think>…</think>`) so only the final reply is searched.

    An unterminated block means the model never reached its answer, so nothing is left.
    """
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    if text.lstrip().startswith("<think>"):
        return ""
    return text


def extract_final_number(text: str) -> Decimal | None:
    """The number a GSM8K-style answer commits to.

    The first number after the last `####`, "answer is" or "answer:" wins, because models often
    keep computing after stating the answer is coming; when that statement is an equation
    ("the answer is 5 + 13 = 18") the number after its last `=` wins. Otherwise the last number
    in the text.
    Thousands separators, `$` signs and a sentence-final period are tolerated, and `18.0`
    equals `18` because the value is compared, not the string.

    Returns:
        The value, or `None` when the text holds no number.
    """
    markers = list(_GSM8K_MARKER.finditer(text))
    if markers:
        tail = text[markers[-1].end() :].split("\n\n", 1)[0]
        statement = _SENTENCE_END.split(tail, 1)[0]
        if "=" in statement:
            tail = statement.rsplit("=", 1)[1]
        match = _NUMBER.search(tail)
        if match:
            return _to_decimal(match, tail)
    matches = list(_NUMBER.finditer(text))
    return _to_decimal(matches[-1], text) if matches else None


def _to_decimal(match: re.Match[str], text: str) -> Decimal | None:
    """A minus sign glued to a preceding word or digit ("10-3", "COVID-19") is not a sign."""
    negative = bool(match["sign"]) and not (match.start() > 0 and text[match.start() - 1].isalnum())
    try:
        value = Decimal(match["digits"].replace(",", "") + (match["frac"] or ""))
    except InvalidOperation:
        return None
    return -value if negative else value


def extract_choice_letter(text: str) -> str | None:
    """The multiple-choice letter (A-D) an answer commits to.

    Tried in order of how explicit the commitment is: "Answer: C" / "the answer is C" (last
    one), "(C)" (last one), a reply that is only a letter, then the last standalone capital A-D.
    Lower-case letters are ignored because "a" is usually the article.

    Returns:
        The letter, or `None` when the text names none.
    """
    for pattern in (_LETTER_AFTER_ANSWER, _LETTER_IN_PARENS):
        matches = list(pattern.finditer(text))
        if matches:
            return matches[-1]["l"]
    lone = _LONE_LETTER.fullmatch(text)
    if lone:
        return lone["l"]
    matches = list(_STANDALONE_LETTER.finditer(text))
    return matches[-1]["l"] if matches else None
