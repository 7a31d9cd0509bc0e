"""Realism of a stored run: its simulated users' first turns on real contexts beside the real users' turns.

A run over a real-conversation dataset holds, per context, the human-reference episode (user mode
`human`, testbed.scenarios.human_reference) beside the simulated users' episodes. This module reads
them into the turns frame of `testbed.analysis.realism.table` (the first generated user turn of each
finished, unperturbed episode, with one judge's labels) and computes the realism table and the
human baseline. A run with no reference episode has no realism: an empty table, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from testbed.analysis.frames import run_frames
from testbed.analysis.realism.table import REAL_SOURCE, REALISM_COLUMNS, human_baseline, realism_frame_columns, realism_table
from testbed.scenarios.human_reference import HUMAN_MODE, WEAK_HUMAN_MODEL
from testbed.store import Store
from testbed.store.frames import identity_of, run_id_of
from testbed.store.records import JudgeIdentity


@dataclass(frozen=True)
class RunRealism:
    """A run's realism: the table per simulated condition, the real users' row, and how strong the reference is."""

    table: pd.DataFrame
    baseline: pd.DataFrame
    weak_reference: bool
    """The real turns answered another message than the simulated users saw (answer regenerated, a dialogue)."""

    @property
    def empty(self) -> bool:
        """Whether the run holds no real context with a simulated turn beside it."""
        return self.table.empty


def realism_turns(store: Store, run_id: str, judge: JudgeIdentity | str | None = None) -> pd.DataFrame:
    """The run's turns frame for `realism_table`: one row per finished, unperturbed episode's first user turn.
    `run_id` may be a unique prefix and `judge` a selector; the run's frames are the command's (`run_frames`)."""
    full = run_id_of(store, run_id)
    frame = run_frames(store, full, identity_of(store, full, judge) if judge is not None else None).judged_turns
    columns = list(realism_frame_columns)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame = frame[(frame.status == "done") & (frame.perturbation == "none")]
    frame = frame.sort_values(["episode_id", "turn_index"]).drop_duplicates("episode_id")
    if not (frame.user_mode == HUMAN_MODE).any():
        return pd.DataFrame(columns=columns)
    labelled = "judge_status" in frame
    scored = frame.judge_status.eq("scored") if labelled else pd.Series(False, index=frame.index)
    out = pd.DataFrame({
        "context_id": frame.item_id, "source": frame.user_mode.where(frame.user_mode != HUMAN_MODE, REAL_SOURCE),
        "user_model": frame.user_model, "user_mode": frame.user_mode, "temperature": frame.temperature.astype(float),
        "text": frame.user_turn.fillna(""), "answer": frame.answer.fillna(""), "question": frame.question.fillna(""),
        "label": frame.judge_label.where(scored) if labelled else None,
        "followup": frame.judge_followup.where(scored) if labelled else None,
    })
    out.loc[out.source != REAL_SOURCE, "source"] = "simulated"
    return out.reset_index(drop=True)


def run_realism(store: Store, run_id: str, judge: JudgeIdentity | str | None = None, *, seed: int = 0,
                resamples: int = 1000, embedder=None, closeness: bool = False) -> RunRealism:
    """The realism table and human baseline of a run (empty when it holds no human reference).

    `closeness` loads the static embedder for the cosine to the real turn, only once the run is known to hold
    references (a run without any never touches the embedding cache); `embedder` passes one in instead."""
    turns = realism_turns(store, run_id, judge)
    if turns.empty or not (turns.source == REAL_SOURCE).any() or not (turns.source != REAL_SOURCE).any():
        return RunRealism(pd.DataFrame(columns=REALISM_COLUMNS), human_baseline(turns), False)
    if embedder is None and closeness:
        embedder = static_embedder()
    weak = bool((turns.user_model[turns.source == REAL_SOURCE] == WEAK_HUMAN_MODEL).any())
    return RunRealism(realism_table(turns, seed=seed, resamples=resamples, embedder=embedder), human_baseline(turns), weak)


def static_embedder():
    """The static MiniLM embedder for closeness to the real turn, or None when its package is not installed or its
    cache cannot be written (a read-only home): the cosine is then n/a, and nothing else changes."""
    from testbed.judges.learned.embedding import EmbeddingUnavailable, default_embedder

    try:
        return default_embedder()
    except (EmbeddingUnavailable, OSError):
        return None
