"""Model text detached from a real person's text it copies, so labelled rows can be committed without it.

A dialogue opened by a real ShareGPT user's first turn is labelled as rows of model text (the
assistant's answers, the simulated user's turns), but that text may quote the real opening, and
real people's words are never committed. `detach` replaces every verbatim copy of the source in a
text by a marker `⟦src:START:END⟧` (character offsets into the source); `attach` puts the copies
back from the source, which training reads from the installed package (`sharegpt_sources`). A row
carries the source's fingerprint, so text rebuilt from another package version is refused rather
than silently wrong.

What counts as a copy (both rules are verbatim and case-sensitive, whitespace included): a
stretch of the text that also occurs in the source and is at least `min_chars` long, or one that
contains a run of five consecutive words of the source (words are whitespace-separated; the run
keeps the source's own whitespace), so short quotes go too. Each copy is taken at its widest: the
longest stretch, starting as early as possible, that still occurs in the source.

Escaping: a `⟦` already in the text is written `⟦⟦⟧`, so every `⟦` of a detached text starts a
marker or an escape and `attach(detach(t, s), s) == t` for every `t` and `s`.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

OPEN, CLOSE = "⟦", "⟧"
ESCAPED_OPEN = OPEN + OPEN + CLOSE
"""How a `⟦` of the text itself is written in a detached text."""
RUN_WORDS = 5
"""A run of this many consecutive source words is a copy whatever its length in characters."""
QUESTION_IS_SOURCE = None
"""A detached row's `question` when the request was the source itself, word for word."""
_TOKEN = re.compile(re.escape(OPEN) + r"(?:src:(\d+):(\d+)|" + re.escape(OPEN) + ")" + re.escape(CLOSE))
_WORD = re.compile(r"\S+")


class SourceMismatch(ValueError):
    """The source a row is attached to is not the text it was detached from (another package version)."""


class MissingSource(LookupError):
    """A row's item is not among the sources given, or not among the items a selection loads."""


def fingerprint(source: str) -> str:
    """A short SHA-256 of the source (16 hex digits), stored with a row so `attach_rows` can tell it got the same text."""
    return hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


def detach(text: str, source: str, min_chars: int = 20) -> str:
    """`text` with every copy of `source` (see the module's docstring) replaced by `⟦src:START:END⟧` markers.

    Args:
        text: Model text that may quote the source.
        source: The text that must not survive (a real person's words).
        min_chars: A common stretch at least this long is a copy even with fewer than five words.

    Raises:
        ValueError: `min_chars` is below 1.
    """
    if min_chars < 1:
        raise ValueError(f"min_chars must be >= 1, got {min_chars}")
    reach, where = _longest_matches(text, source)
    out, at = [], 0
    for begin, end in _copies(text, source, reach, min_chars):
        out.append(_escape(text[at:begin]))
        at = begin
        while at < end:
            length = min(int(reach[at]), end - at)
            start = int(where[at])
            out.append(f"{OPEN}src:{start}:{start + length}{CLOSE}")
            at += length
    out.append(_escape(text[at:]))
    return "".join(out)


def attach(text: str, source: str) -> str:
    """The text `detach` was given: every marker replaced by its stretch of `source`, escapes undone.

    Raises:
        ValueError: A `⟦` starts neither a marker nor an escape, or a marker lies outside the source
            (the text was detached from another source).
    """
    out, at = [], 0
    for token in _TOKEN.finditer(text):
        out.append(_plain(text, at, token.start()))
        if token.group(1) is None:
            out.append(OPEN)
        else:
            start, end = int(token.group(1)), int(token.group(2))
            if not start <= end <= len(source):
                raise ValueError(f"marker {token.group(0)} lies outside the source ({len(source)} characters): "
                                 "the text was detached from another source")
            out.append(source[start:end])
        at = token.end()
    out.append(_plain(text, at, len(text)))
    return "".join(out)


def surviving_runs(text: str, source: str, words: int = RUN_WORDS) -> list[tuple[int, int]]:
    """(start, end) in `text` of every occurrence of a run of `words` consecutive source words: what a check
    before committing asserts is empty for a detached text (positions only, so the check prints no source text)."""
    found = []
    for run in _runs(source, words):
        at = text.find(run)
        while at >= 0:
            found.append((at, at + len(run)))
            at = text.find(run, at + 1)
    return sorted(found)


def _longest_matches(text: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """For each position of `text`: the length of the longest stretch starting there that occurs in `source`,
    and where in `source` (its first such occurrence). Dynamic programming over rows of the common-suffix table,
    from the end of the text, one numpy row per character: quadratic, fine for texts of a few thousand characters."""
    n, m = len(text), len(source)
    reach, where = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    if n == 0 or m == 0:
        return reach, where
    codes = np.fromiter(map(ord, source), dtype=np.int64, count=m)
    below = np.zeros(m + 1, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        row = np.zeros(m + 1, dtype=np.int64)
        row[:m] = np.where(codes == ord(text[i]), below[1:] + 1, 0)
        best = int(row.argmax())
        reach[i], where[i] = row[best], best
        below = row
    return reach, where


def _copies(text: str, source: str, reach: np.ndarray, min_chars: int) -> list[tuple[int, int]]:
    """Disjoint (begin, end) stretches of `text` covering every copy; a copy starts at `i` when the longest common
    stretch there is `min_chars` long or holds a run of source words, and spans that whole stretch."""
    n = len(text)
    run_end = np.full(n + 1, n + 1, dtype=np.int64)
    for begin, end in surviving_runs(text, source):
        run_end[begin] = min(run_end[begin], end)
    earliest_run_end = np.minimum.accumulate(run_end[::-1])[::-1]
    spans: list[tuple[int, int]] = []
    for i in range(n):
        end = i + int(reach[i])
        if end == i or (reach[i] < min_chars and earliest_run_end[i] > end):
            continue
        if spans and i <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((i, end))
    return spans


def _runs(source: str, words: int) -> set[str]:
    """Every run of `words` consecutive words of `source`, with the source's whitespace between them."""
    spans = [w.span() for w in _WORD.finditer(source)]
    return {source[spans[k][0]:spans[k + words - 1][1]] for k in range(len(spans) - words + 1)}


def _escape(text: str) -> str:
    return text.replace(OPEN, ESCAPED_OPEN)


def _plain(text: str, begin: int, end: int) -> str:
    """Text between tokens of a detached text, which holds no `⟦` (each one starts a token)."""
    piece = text[begin:end]
    if OPEN in piece:
        raise ValueError(f"not a detached text: the {OPEN!r} at {begin + piece.index(OPEN)} starts neither a marker "
                         f"`{OPEN}src:START:END{CLOSE}` nor an escape `{ESCAPED_OPEN}`")
    return piece


def detach_row(row: dict, source: str, *, dataset: str, item_id: str,
               fields: Sequence[str] = ("question", "assistant", "user_turn"), context_field: str = "context") -> dict:
    """A copy of a labelled row that may be committed: its texts detached from `source`, and where the source is.

    `question` becomes None when it is the source word for word (the usual case: the dialogue's request was the
    real opening), else it is detached like the other `fields` and every `row[context_field][i]["content"]`.
    Fields the row lacks are skipped; None stays None. `row["source"]` is set to
    `{"dataset", "item_id", "sha"}` (`sha`: `fingerprint(source)`), which `attach_rows` needs.

    Raises:
        ValueError: The row's `question` is None, which could not be told apart from a detached question.
    """
    out = copy.deepcopy(row)
    for field in fields:
        if field not in out:
            continue
        if field == "question":
            if out[field] is None:
                raise ValueError(f"row {row.get('id', '?')!r}: question is None; detach_row needs the request's text")
            if out[field] == source:
                out[field] = QUESTION_IS_SOURCE
                continue
        if out[field] is not None:
            out[field] = detach(out[field], source)
    for entry in out.get(context_field) or []:
        if entry.get("content") is not None:
            entry["content"] = detach(entry["content"], source)
    out["source"] = {"dataset": dataset, "item_id": item_id, "sha": fingerprint(source)}
    return out


def attach_rows(rows: Iterable[dict], sources: Mapping[str, str],
                fields: Sequence[str] = ("question", "assistant", "user_turn"), context_field: str = "context") -> list[dict]:
    """The rows as they were before `detach_row`, their source texts taken from `sources` (item id → text, e.g.
    `sharegpt_sources`). Rows without a `source` key pass through unchanged; the `source` key is kept.

    Raises:
        MissingSource: A row's item is not in `sources`; the message names it.
        SourceMismatch: `sources` gives a row's item a text other than the one it was detached from; the message
            names the item and says which package version to install.
    """
    out = []
    for row in rows:
        if "source" not in row:
            out.append(row)
            continue
        ref = row["source"]
        if ref["item_id"] not in sources:
            raise MissingSource(f"row {row.get('id', '?')!r} was detached from item {ref['item_id']!r} of {ref['dataset']}, "
                           "which the sources given lack; load it with the selection the rows were made with")
        source = sources[ref["item_id"]]
        check_source(ref, source)
        whole = copy.deepcopy(row)
        for field in fields:
            if field == "question" and whole.get(field, "") is QUESTION_IS_SOURCE:
                whole[field] = source
            elif whole.get(field) is not None:
                whole[field] = attach(whole[field], source)
        for entry in whole.get(context_field) or []:
            if entry.get("content") is not None:
                entry["content"] = attach(entry["content"], source)
        out.append(whole)
    return out


def check_source(ref: Mapping[str, str], source: str) -> None:
    """Refuse a source whose fingerprint is not the one a row stored (`ref`: the row's `source`).

    Raises:
        SourceMismatch: The message names the item and the package version to install.
    """
    if fingerprint(source) == ref["sha"]:
        return
    raise SourceMismatch(
        f"item {ref['item_id']!r}: the installed package gives a different text for {ref['dataset']} than the one these "
        f"rows were detached from (fingerprint {fingerprint(source)}, rows have {ref['sha']}); "
        f"fix: install the pinned package version ({_install_hint(ref['dataset'])})")


def sharegpt_sources(item_ids: Iterable[str], selection: Mapping, dataset: str = "sharegpt") -> dict[str, str]:
    """The real openings of `item_ids` from the installed package: item id → the dialogue's first user message.

    `selection` is the `items:` section of the spec the dialogues were run with (`limit`, `seed`, `contexts`), so the
    same items are loaded; a dialogue with `opening: dataset` speaks an item's messages as its opening turns, and its
    request (a row's `question`, `testbed.transcript.request_text`) is the first user message among them.

    Raises:
        MissingSource: An id is not among the items the selection gives; the message names it.
        RuntimeError: The dataset's package is not installed; the message has the install command.
    """
    from testbed.datasets import load_items
    from testbed.specs.scenario import ItemSelection
    from testbed.transcript import request_text

    chosen = ItemSelection.model_validate(dict(selection))
    items = {i.item_id: i for i in load_items(dataset, limit=chosen.limit, seed=chosen.seed, contexts=chosen.contexts)}
    wanted = list(dict.fromkeys(item_ids))
    missing = [i for i in wanted if i not in items]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise MissingSource(f"item {missing[0]!r}{more} is not among the {len(items)} items of "
                       f"{dataset} that selection {dict(selection)} gives from the installed package; use the spec's "
                       f"`items:` section the dialogues were run with, and the pinned package ({_install_hint(dataset)})")
    return {i: request_text(items[i].messages) for i in wanted}


def _install_hint(dataset: str) -> str:
    from testbed.datasets.catalog import UnknownDataset, dataset_entry

    try:
        return dataset_entry(dataset).source.install_hint
    except UnknownDataset:
        return f"the package version the rows of {dataset} were made with"
