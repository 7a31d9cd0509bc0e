"""Realism of a stored run: its simulated users' first turns on real contexts beside the real users' turns.

A run over a real-conversation dataset holds, per context, the human-reference episode (user mode
`human`, testbed.scenarios.human_reference) beside the simulated users' episodes. This module reads
them into the turns frame of `testbed.analysis.realism.table` (the first generated user turn of each
finished, unperturbed episode, with one judge's labels) and computes the realism table and the
human baseline. A run with no reference episode has no realism: an empty table, not an error.
Given the judge's measured error rates (what `report --correct-with` reads), both tables carry the
follow-up rates corrected for them, reviewed labels stage by stage as the run report corrects them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from testbed.analysis.frames import run_frames
from testbed.analysis.judge_quality.correction import JudgeErrorRates
from testbed.analysis.realism.followup_correction import FollowupCorrection
from testbed.analysis.realism.table import (
    REAL_SOURCE,
    REALISM_COLUMNS,
    human_baseline,
    realism_frame_columns,
    realism_table,
    with_correction_columns,
)
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
    frames = run_frames(store, full, identity_of(store, full, judge) if judge is not None else None)
    frame = frames.judged_turns
    columns = [*realism_frame_columns, "reviewed"]
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
        "reviewed": decided_by_review(frame, frames.labels) if labelled else False,
    })
    out.loc[out.source != REAL_SOURCE, "source"] = "simulated"
    return out.reset_index(drop=True)


def decided_by_review(frame: pd.DataFrame, labels: pd.DataFrame) -> pd.Series:
    """True for each turn of `frame` whose reviewed verdict a reviewer decided (the `review` stage), else False."""
    from testbed.judges.review import REVIEW, stage_of

    if labels.empty or "raw" not in labels:
        return pd.Series(False, index=frame.index)
    stage = labels.set_index(["episode_id", "turn_index"]).raw.map(stage_of).eq(REVIEW)
    keys = pd.MultiIndex.from_arrays([frame.episode_id, frame.turn_index])
    return pd.Series(stage.reindex(keys).fillna(False).astype(bool).to_numpy(), index=frame.index)


def followup_correction(store: Store, run_id: str, judge: JudgeIdentity | str | None,
                        rates: JudgeErrorRates) -> FollowupCorrection:
    """How the run's realism follow-up rates are corrected under `judge`'s labels: with `rates` for a fast judge;
    for reviewed labels, the fast part with `rates` within the band it decided and the reviewed part taken as right,
    as `review_correction.with_reviewed_corrected_rates` corrects the run report."""
    from testbed.analysis.judge_quality.review_correction import review_counts
    from testbed.judges.review import stages
    from testbed.store.labels import HUMAN, REVIEWED

    full = run_id_of(store, run_id)
    who = identity_of(store, full, judge) if judge is not None else None
    if who is None or who.judge != REVIEWED:
        return FollowupCorrection(rates, rates.source)
    cutoff = review_counts(store, full, who)[1]
    band = rates.within(cutoff) if math.isfinite(cutoff) else rates
    reviewer = stages(who)[-1]
    taken = "a person, taken as right" if reviewer.judge == HUMAN else f"{reviewer}, taken as right (its errors are not measured here)"
    return FollowupCorrection(band, f"fast part: {band.source}; reviewed part: {taken}")


def run_realism(store: Store, run_id: str, judge: JudgeIdentity | str | None = None, *, seed: int = 0,
                resamples: int = 1000, embedder=None, closeness: bool = False,
                correction: JudgeErrorRates | None = None) -> RunRealism:
    """The realism table and human baseline of a run (empty when it holds no human reference).

    `closeness` loads the static embedder for the cosine to the real turn, only once the run is known to hold
    references (a run without any never touches the embedding cache); `embedder` passes one in instead.
    `correction`, the judge's error counts, adds the corrected follow-up rates (`followup_correction`)."""
    turns = realism_turns(store, run_id, judge)
    how = followup_correction(store, run_id, judge, correction) if correction is not None else None
    if turns.empty or not (turns.source == REAL_SOURCE).any() or not (turns.source != REAL_SOURCE).any():
        columns = REALISM_COLUMNS if how is None else with_correction_columns(REALISM_COLUMNS)
        return RunRealism(pd.DataFrame(columns=columns), human_baseline(turns, how), False)
    if embedder is None and closeness:
        embedder = static_embedder()
    weak = bool((turns.user_model[turns.source == REAL_SOURCE] == WEAK_HUMAN_MODEL).any())
    return RunRealism(realism_table(turns, seed=seed, resamples=resamples, embedder=embedder, correction=how),
                      human_baseline(turns, how), weak)


def static_embedder():
    """The static MiniLM embedder for closeness to the real turn, or None when its package is not installed or its
    cache cannot be written (a read-only home): the cosine is then n/a, and nothing else changes."""
    from testbed.judges.learned.embedding import EmbeddingUnavailable, default_embedder

    try:
        return default_embedder()
    except (EmbeddingUnavailable, OSError):
        return None
