"""Episodes of a run as a pandas frame: one row per episode with its question and user turn; a command's runs.

A command reads each run once: it holds the run's `RunFrames` (testbed.store.run_frames) and hands it to every
table it prints. Code that still names a run by (store, run_id) gets the command's one RunFrames of that run
from `run_frames` inside a `shared_reads` block, and a fresh one outside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

import pandas as pd

from testbed.store import Store
from testbed.store.records import CONDITIONS, JudgeIdentity
from testbed.store.run_frames import RunFrames

__all__ = ["CONDITIONS", "episode_table", "episodes_frame", "judge_labels", "normalise", "run_frames", "shared_reads"]

_SHARED: ContextVar[dict | None] = ContextVar("shared_reads", default=None)


@contextlib.contextmanager
def shared_reads(*runs: RunFrames) -> Iterator[None]:
    """Within the block, each run is one `RunFrames` (`run_frames`), so its frames are read from the store once.

    A report prints several tables from the same frames; at study size each read takes a second or
    more, so the report's tables share them. Only inside the block: outside it every call reads
    afresh, so a notebook never sees a stale frame. A block inside another shares the outer one's runs.
    `runs` already read (a comparison's) are the block's frames of those runs.
    """
    outer = _SHARED.get()
    shared = outer if outer is not None else {}
    for run in runs:
        shared.setdefault((id(run.store), run.run_id), run)
    if outer is not None:
        yield
        return
    token = _SHARED.set(shared)
    try:
        yield
    finally:
        _SHARED.reset(token)


def run_frames(store: Store, run_id: str, judge: JudgeIdentity | None = None) -> RunFrames:
    """The run (full id) under `judge` as `RunFrames`: the `shared_reads` block's one per run, else a fresh one."""
    shared = _SHARED.get()
    if shared is None:
        return RunFrames(store, run_id, judge)
    key = (id(store), run_id)
    if key not in shared:
        shared[key] = RunFrames(store, run_id)
    return shared[key].with_judge(judge)


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


def episode_table(frames: RunFrames) -> pd.DataFrame:
    """One row per episode: conditions, status, score, the question and the final user turn; built once per run.

    The final user turn is the last generated user turn after the episode's last assistant
    message: in a probe, the one turn the simulated user wrote in reply to the answer.
    """
    return frames.derived("episode_table", lambda: _episode_table(frames))


def episodes_frame(store: Store, run_id: str) -> pd.DataFrame:
    """`episode_table` of a run named by id (shared within `shared_reads`)."""
    return episode_table(run_frames(store, run_id))


def judge_labels(store: Store, run_id: str, who: JudgeIdentity) -> pd.DataFrame:
    """`testbed.store.labels.labels_frame` of a run named by id (`RunFrames.labels`, shared within `shared_reads`)."""
    return run_frames(store, run_id, who).labels


def _episode_table(frames: RunFrames) -> pd.DataFrame:
    episodes = frames.episodes
    ends = frames.episode_ends
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
