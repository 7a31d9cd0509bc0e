"""`normalise`, which reports use to tell a user turn that restates the question, is the regex rule it replaced."""

from __future__ import annotations

import random
import re

from testbed.analysis.frames import normalise

SPACE = re.compile(r"\s+")
EDGE = re.compile(r"^[\W_]+|[\W_]+$")
POOL = list(" \t\n\u00a0\u2003\u3000\x1c\x85_.,!?-'\"*#aBzß\ufb01\u0301\u0660٣Ⅻ²½日本")


def reference(text: str) -> str:
    return EDGE.sub("", SPACE.sub(" ", text.casefold()).strip())


def test_normalise_matches_the_regular_expressions_on_random_unicode_text():
    rnd = random.Random(7)
    for _ in range(20000):
        text = "".join(rnd.choice(POOL) for _ in range(rnd.randint(0, 14)))
        assert normalise(text) == reference(text), repr(text)


def test_normalise_folds_case_collapses_space_and_drops_edge_punctuation():
    assert normalise('  "How MANY   apples\tare left?" ') == "how many apples are left"
    assert normalise("__**…**__") == ""
    assert normalise("Straße_") == "strasse"
    assert normalise("x") == "x" and normalise("") == ""
