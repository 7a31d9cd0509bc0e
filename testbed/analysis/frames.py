"""Episodes of a run as a pandas frame: one row per episode with its question and user turn."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

import pandas as pd

from testbed.store import Store
from testbed.store.frames import episode_ends_df, episodes_df
from testbed.store.labels import labels_frame
from testbed.store.records import CONDITIONS, JudgeIdentity

__all__ = ["CONDITIONS", "episodes_frame", "judge_labels", "normalise", "shared_reads"]

_SHARED: ContextVar[dict | None] = ContextVar("shared_reads", default=None)


@contextlib.contextmanager
def shared_reads() -> Iterator[None]:
    """Within the block, each run's `episodes_frame` and `judge_labels` are read from the store once.

    A report prints several tables from the same frames; at study size each read takes a second or
    more, so the report's tables share them. Only inside the block: outside it every call reads
    afresh, so a notebook never sees a stale frame.
    """
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _shared(key: tuple, read: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    cache = _SHARED.get()
    if cache is None:
        return read()
    if key not in cache:
        cache[key] = read()
    return cache[key].copy(deep=False)


def normalise(text: str) -> str:
    """Case-folded text with whitespace collapsed and edge punctuation dropped, for identity tests.

    The same as collapsing `\\s+` to one space and removing `^[\\W_]+|[\\W_]+$`, done with str
    methods, which are several times faster: a report normalises every user turn of a run.
    """
    t = " ".join(text.casefold().split())
    start, end = 0, len(t)
    while start < end and not t[start].isalnum():
        start += 1
    while end > start and not t[end - 1].isalnum():
        end -= 1
    return t[start:end]


def episodes_frame(store: Store, run_id: str) -> pd.DataFrame:
    """One row per episode: conditions, status, score, the question and the final user turn.

    The final user turn is the last generated user turn after the episode's last assistant
    message: in a probe, the one turn the simulated user wrote in reply to the answer.
    """
    return _shared(("episodes", id(store), run_id), lambda: _episodes_frame(store, run_id))


def judge_labels(store: Store, run_id: str, who: JudgeIdentity) -> pd.DataFrame:
    """`testbed.store.labels.labels_frame`, shared by the tables of a report (`shared_reads`)."""
    return _shared(("labels", id(store), run_id, who), lambda: labels_frame(store, run_id, who))


def _episodes_frame(store: Store, run_id: str) -> pd.DataFrame:
    episodes = episodes_df(store, run_id, exact=True)
    ends = episode_ends_df(store, run_id, exact=True)
    typed = bool(len(ends))
    question = ends.loc[ends.question.notna(), ["episode_id", "question"]].astype({"question": "str"} if typed else {})
    final_user = ends.loc[ends.user_turn_index.notna(), ["episode_id", "user_turn", "user_turn_tokens", "user_turn_index"]]
    final_user = final_user.astype({"user_turn": "str", "user_turn_tokens": "int64", "user_turn_index": "int64"} if typed else {})
    frame = episodes.merge(question, on="episode_id", how="left").merge(final_user, on="episode_id", how="left")
    frame["user_turn_words"] = frame.user_turn.fillna("").str.split().str.len()
    questions: dict[str, str] = {}
    frame["identical_to_question"] = [
        isinstance(u, str) and isinstance(q, str) and bool(nq := _cached(questions, q)) and normalise(u) == nq
        for u, q in zip(frame.user_turn, frame.question)
    ]
    return frame


def _cached(seen: dict[str, str], text: str) -> str:
    """`normalise(text)`, computed once per distinct text (a run asks each question many times)."""
    if text not in seen:
        seen[text] = normalise(text)
    return seen[text]
