"""Reports of multi-turn runs: turns, terminations, follow-up rate over every user turn, drift,
and for information gathering the fact-recovery scores. Rates come with Wilson 95 % intervals."""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.drift import drift_summary, frames_drift, survival_curve
from testbed.analysis.frames import CONDITIONS
from testbed.analysis.info_metrics import score_info_episode
from testbed.analysis.stats import wilson_interval
from testbed.judges.taxonomy import taxonomy
from testbed.specs.registries import ReportEntry
from testbed.store.run_frames import RunFrames

GROUP = [c for c in CONDITIONS if c != "perturbation"]


def _rate(name: str, hits: int, n: int, interval: str | None = None) -> dict:
    lo, hi = wilson_interval(hits, n)
    interval = interval or name
    return {name: hits / n if n else math.nan, f"{interval}_lo": lo, f"{interval}_hi": hi}


def _turn_labels(run: RunFrames) -> pd.DataFrame:
    """The finished episodes' generated user turns: whether each is blank, and the judge's verdict (None without one)."""
    turns = run.turns
    turns = turns[turns.status == "done"]
    turns = pd.DataFrame({"episode_id": turns.episode_id, "turn_index": turns.turn_index,
                          "blank": [not text.strip() for text in turns.user_turn]}).reset_index(drop=True)
    turns = turns.astype({"turn_index": "int64", "blank": bool})
    if run.judge is None:
        return turns.assign(status=None, label=None, followup=None)
    labels = run.labels[["episode_id", "turn_index", "status", "label", "followup"]]
    return turns.merge(labels, on=["episode_id", "turn_index"], how="left")


def _info_scores(run: RunFrames, episodes: pd.DataFrame) -> pd.DataFrame:
    from testbed.scenarios.info_tasks import InfoTaskSet

    store, run_id, spec = run.store, run.run_id, run.run.spec
    tasks = {t.id: t for t in InfoTaskSet.model_validate(spec["tasks"]).tasks}
    done = {e.episode_id: e for e in episodes[episodes.status == "done"].itertuples()}

    def row(episode_id: str, messages: list) -> dict:
        e = done[episode_id]
        scores = score_info_episode(messages, tasks[e.item_id], e.termination)
        scores["leaky_turns"] = len({turn for turn, _ in scores.pop("leaks")})
        return {"episode_id": episode_id, **{k: v for k, v in scores.items() if not isinstance(v, (dict, list))}}

    scored = {eid: row(eid, messages) for eid, messages in store.iter_messages(run_id) if eid in done}
    return pd.DataFrame([scored[eid] if eid in scored else row(eid, []) for eid in done])


def conversation_report(run: RunFrames, with_info_scores: bool = False) -> pd.DataFrame:
    """One row per condition group of a dialogue run's frames under their judge; `with_info_scores` adds information
    gathering's fact scores."""
    judge, episodes = run.judge, run.episodes
    turns = _turn_labels(run).merge(episodes[["episode_id", *GROUP]], on="episode_id")
    drift = frames_drift(run) if judge is not None else None
    info = _info_scores(run, episodes) if with_info_scores else None
    rows = []
    for keys, g in episodes.groupby(GROUP, sort=True, dropna=False):
        done = g[g.status == "done"]
        t = turns[turns.episode_id.isin(done.episode_id)]
        scored = t[t.status == "scored"]
        row = {**dict(zip(GROUP, keys)), "episodes": len(g), "errors": int((g.status == "error").sum()),
               "user_turns": len(t), "user_turns_per_episode": len(t) / len(done) if len(done) else math.nan,
               "empty_user_turns": int(t.blank.sum())}
        graded = g[g.task_score.notna()]
        if len(graded):
            row.update(_rate("accuracy", int(graded.task_score.sum()), len(graded)))
            row["scored"] = len(graded)
        for reason, n in done.termination.value_counts().items():
            row[f"end_{reason}"] = n / len(done)
        if judge is not None:
            row.update({"judged": len(scored), "unscored": int((t.status == "unscored").sum()), "unjudged": int(t.status.isna().sum())})
            row.update(_rate("followup_rate", int(scored.followup.fillna(0).astype(bool).sum()), len(scored), "followup"))
            labelled = scored.label.dropna()
            for label in taxonomy().labels:
                row[f"share_{label}"] = float((labelled == label).mean()) if len(labelled) else math.nan
            summary = drift_summary(drift[drift.episode_id.isin(done.episode_id)])
            curve = survival_curve(drift[drift.episode_id.isin(done.episode_id)])
            row.update({"drifted": summary["drifted"], "drift_evidence": summary["evidence"], "drift_share": summary["share_drifted"],
                        "drift_lo": summary["share_lo"], "drift_hi": summary["share_hi"], "median_onset": summary["median_onset"],
                        "onset_distribution": " ".join(f"{k}:{n}" for k, n in summary["onset_counts"].items()),
                        "in_role_after_k": " ".join(f"{x:.2f}" for x in curve[curve.k >= 1].survival)})
        if info is not None:
            s = info[info.episode_id.isin(done.episode_id)]
            row.update(_rate("recovered", int(s.facts_recovered.sum()), int(s.facts_total.sum())))
            row.update(_rate("in_final_output", int(s.facts_in_final_output.sum()), int(s.facts_total.sum())))
            row.update(_rate("premature", int(s.premature_answer.sum()), len(s)))
            row.update(_rate("leak_rate", int(s.leaky_turns.sum()), int(s.user_turns.sum())))
            row["questions"] = float(s.questions.mean()) if len(s) else math.nan
            row["questions_per_recovered_fact"] = s.questions.sum() / s.facts_recovered.sum() if s.facts_recovered.sum() else math.nan
            row["answered"] = float(s.answered.mean()) if len(s) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def info_gathering_report(run: RunFrames) -> pd.DataFrame:
    """The conversation report of an information-gathering run's frames, with its fact scores per condition group."""
    return conversation_report(run, with_info_scores=True)


CONVERSATION_REPORT = ReportEntry("conversation", conversation_report)
"""The dialogue's report entry."""
INFO_GATHERING_REPORT = ReportEntry("info_gathering", info_gathering_report)
"""Information gathering's report entry."""
