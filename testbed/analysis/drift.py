"""Role drift in multi-turn dialogues: when does the simulated user stop acting as the user?

An episode *drifts* at the first generated user turn whose judge label is a drift label
(`taxonomy().drift_labels`: echoing the assistant, planning aloud). Drift is measured in user turns,
not message indices, so that dialogues with and without system prompts compare: `onset` k = 3 means
"the third user turn the model wrote was the first out of role".

Unscored turns (a judge reply that could not be parsed, a binary judge without an 8-way label, or a
turn nobody judged) are *unknown*: they never count as drift, and they never count as evidence
that the user was still in role. An episode is therefore followed only up to its last turn with a
label (`observed_turns`); after that it is censored, exactly like an episode that simply ended.
"""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.frames import CONDITIONS, run_frames
from testbed.analysis.stats import wilson_interval
from testbed.judges.taxonomy import taxonomy
from testbed.store import Store
from testbed.store.frames import episodes_df
from testbed.store.labels import JudgeIdentity
from testbed.store.run_frames import RunFrames

GROUP = CONDITIONS
"""The conditions an episode was generated under: the columns drift is compared across."""

ONSET_COLUMNS = ["episode_id", "user_turns", "scored_turns", "observed_turns", "onset", "onset_turn_index", "drifted"]


def drift_onsets(labels: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """One row per episode with its drift onset, from per-turn labels and the generated user turns.

    `labels` has episode_id, turn_index, status, label (as `labels_frame` returns); `turns` lists
    every generated user turn (episode_id, turn_index), so that unjudged turns still take their
    place in the ordinal count. Columns:

    - `user_turns`: generated user turns in the episode;
    - `scored_turns`: those with a scored 8-way label;
    - `onset`: 1-based ordinal k of the first turn labelled with a drift label (NaN when none);
    - `onset_turn_index`: that turn's message index (NaN when none);
    - `drifted`: whether the episode drifted;
    - `observed_turns`: how far the episode was followed: the onset when it drifted, else the
      ordinal of its last labelled turn (0 when none was labelled). Survival uses this, so that
      trailing unscored turns are censored rather than counted as "still in role".
    """
    if turns.empty:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
            ONSET_COLUMNS, ["object", "int64", "int64", "int64", "float64", "float64", "bool"])})
    drift = taxonomy().drift_labels
    ordered = turns[["episode_id", "turn_index"]].drop_duplicates().sort_values(["episode_id", "turn_index"])
    ordered = ordered.assign(k=ordered.groupby("episode_id").cumcount() + 1)
    verdicts = labels.reindex(columns=["episode_id", "turn_index", "status", "label"])
    frame = ordered.merge(verdicts, on=["episode_id", "turn_index"], how="left")
    frame["known"] = (frame.status == "scored") & frame.label.notna()
    frame["drift"] = frame.known & frame.label.isin(drift)
    episodes = frame.groupby("episode_id", sort=True)
    ids = episodes.size().index
    first = frame[frame.drift].drop_duplicates("episode_id").set_index("episode_id").reindex(ids)
    last_known = frame[frame.known].groupby("episode_id").k.max().reindex(ids)
    drifted = first.k.notna()
    return pd.DataFrame({
        "episode_id": ids.to_numpy(),
        "user_turns": episodes.size().to_numpy(),
        "scored_turns": episodes.known.sum().to_numpy().astype("int64"),
        "observed_turns": first.k.where(drifted, last_known).fillna(0).astype("int64").to_numpy(),
        "onset": first.k.astype("float64").to_numpy(),
        "onset_turn_index": first.turn_index.astype("float64").to_numpy(),
        "drifted": drifted.to_numpy(),
    }, columns=ONSET_COLUMNS)


def survival_curve(onsets: pd.DataFrame, max_k: int | None = None) -> pd.DataFrame:
    """Kaplan–Meier share of episodes still in role after k user turns, k = 0..max_k.

    Estimator: S(0) = 1 and S(k) = S(k-1) · (1 - d_k / n_k), where d_k episodes drift at their k-th
    user turn and n_k episodes are *at risk* at k: followed for at least k turns and not drifted
    before k. An episode that ends (or whose later turns are unscored) after `observed_turns` turns
    without drifting is *censored*: it leaves the risk set instead of counting as surviving, so short
    dialogues do not inflate the in-role share of long ones. Where nobody is at risk the curve stays
    flat. Columns: k, at_risk, drifted_at_k, censored_at_k (left after k without drifting), survival.
    An episode is followed for `observed_turns` when present, else `user_turns`; a drifted one
    always until its onset.
    """
    drifted = onsets["drifted"].astype(bool)
    onset = onsets["onset"]
    followed = onsets["observed_turns"] if "observed_turns" in onsets else onsets["user_turns"]
    followed = followed.where(~drifted, onset).astype(int)
    top = int(followed.max()) if len(onsets) else 0
    max_k = top if max_k is None else max_k
    rows, survival = [], 1.0
    for k in range(max_k + 1):
        at_risk = int((followed >= k).sum()) if k else len(onsets)
        d = int((drifted & (onset == k)).sum()) if k else 0
        censored = int((~drifted & (followed == k)).sum())
        if at_risk and k:
            survival *= 1 - d / at_risk
        rows.append({"k": k, "at_risk": at_risk, "drifted_at_k": d, "censored_at_k": censored, "survival": survival})
    return pd.DataFrame(rows, columns=["k", "at_risk", "drifted_at_k", "censored_at_k", "survival"])


def drift_summary(onsets: pd.DataFrame) -> dict:
    """Headline drift numbers: how many episodes drifted, with a Wilson 95 % interval, and when.

    The share is over episodes with at least one labelled user turn (`evidence`): an episode whose
    every turn is unscored says nothing about drift and would only dilute the rate; `episodes`
    counts them all so the exclusion stays visible. `median_onset` is the median k among drifted
    episodes; `km_median_onset` is the first k where the Kaplan–Meier survival falls to 0.5 or
    below (NaN when it never does), which also accounts for censored episodes.
    """
    followed = onsets["observed_turns"] if "observed_turns" in onsets else onsets["user_turns"]
    evidence = int((followed > 0).sum())
    drifted = int(onsets["drifted"].sum())
    lo, hi = wilson_interval(drifted, evidence)
    drifted_onsets = onsets.loc[onsets["drifted"].astype(bool), "onset"].astype(int)
    curve = survival_curve(onsets)
    below = curve[curve.survival <= 0.5]
    return {
        "episodes": len(onsets),
        "evidence": evidence,
        "drifted": drifted,
        "share_drifted": drifted / evidence if evidence else math.nan,
        "share_lo": lo,
        "share_hi": hi,
        "onset_counts": {int(k): int(n) for k, n in drifted_onsets.value_counts().sort_index().items()},
        "median_onset": float(drifted_onsets.median()) if drifted else math.nan,
        "km_median_onset": float(below.k.iloc[0]) if len(below) else math.nan,
    }


def summary_line(summary: dict) -> str:
    """The summary as one line for a terminal, e.g. `drift: 3/10 episodes (30.0 %, 95 % CI 11–60 %), median onset k=2`."""
    if not summary["evidence"]:
        return f"drift: no labelled user turns in {summary['episodes']} episodes"
    share = f"{summary['share_drifted']:.1%}, 95% CI {summary['share_lo']:.0%}–{summary['share_hi']:.0%}"
    onset = f", median onset k={summary['median_onset']:g}" if summary["drifted"] else ""
    return f"drift: {summary['drifted']}/{summary['evidence']} episodes ({share}){onset}"


def turns_frame(store: Store, run_id: str) -> pd.DataFrame:
    """The generated user turns (episode_id, turn_index) of the run's finished episodes, as `Store.turns` gives them."""
    return pd.DataFrame([tuple(k) for k in store.turn_keys(run_id)], columns=["episode_id", "turn_index"])


def run_drift(store: Store, run_id: str, identity: JudgeIdentity) -> pd.DataFrame:
    """`drift_onsets` for a stored run under one judge's labels, with each episode's conditions
    (assistant_model, user_model, dataset, user_mode, temperature, perturbation) joined on, so that
    drift can be grouped by model or scenario. Episodes without a generated user turn are left out."""
    return frames_drift(run_frames(store, run_id, identity))


def frames_drift(frames: RunFrames) -> pd.DataFrame:
    """`run_drift` of a run's frames under their judge: its labels, turns and episodes, each read once."""
    onsets = drift_onsets(frames.labels, frames.turn_keys)
    conditions = frames.episodes[["episode_id", *GROUP]].sort_values("episode_id", ignore_index=True)
    return onsets.merge(conditions, on="episode_id", how="left")


def episode_conditions(store: Store, run_id: str) -> pd.DataFrame:
    """Every episode of the run (errored ones too) with the `GROUP` conditions it ran under."""
    episodes = episodes_df(store, run_id, exact=True)[["episode_id", *GROUP]]
    return episodes.sort_values("episode_id", ignore_index=True)
