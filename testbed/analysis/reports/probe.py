"""The run report: per assistant model × dataset × user mode × temperature (× perturbation)."""

from __future__ import annotations

import math

import pandas as pd

from testbed.analysis.frames import CONDITIONS, episode_table, run_frames, shared_reads
from testbed.analysis.stats import wilson_interval
from testbed.judges.taxonomy import taxonomy
from testbed.specs.registries import KINDS, REPORTS, ReportEntry
from testbed.store import Store
from testbed.store.labels import REVIEWED, JudgeIdentity
from testbed.store.run_frames import RunFrames

GROUP = CONDITIONS

EPISODE_COLUMNS = ["episodes", "errors", "scored", "accuracy", "accuracy_lo", "accuracy_hi", "user_turn_words", "user_turn_tokens",
                   "empty_user_turns", "identical_to_question", "identical_lo", "identical_hi"]
"""The probe report's columns after the conditions: episodes, task accuracy, what the user turns look like."""


def judge_columns() -> list[str]:
    """The columns a judge adds: follow-up rate over scored turns, what was left out, each label's share."""
    return ["judged", "unscored", "unjudged", "followup_rate", "followup_lo", "followup_hi",
            *(f"share_{label}" for label in taxonomy().labels)]


class ReportOptionError(ValueError):
    """An option the run's report does not read (ReportEntry.options): refused, never silently ignored."""


def report_frame(store: Store, run_id: str, judge: JudgeIdentity | None = None, correction=None, **options) -> pd.DataFrame:
    """`report_of` the run (full id) under `judge`, its frames read once (shared with the command's other tables
    inside `testbed.analysis.frames.shared_reads`)."""
    with shared_reads():
        return report_of(run_frames(store, run_id, judge), correction, **options)


def report_of(run: RunFrames, correction=None, **options) -> pd.DataFrame:
    """The report of a run's frames under their judge; rates exclude errored episodes (and, for judge rates, unscored
    turns), and `errors`, `unscored` and `unjudged` say how many were excluded. The run kind's `report`
    named by its entry in testbed.specs.registries.KINDS builds it from the frames, so each kind has its own columns;
    a run not in the store gives the first kind's empty frame. `options` go to that report's builder; one it does not
    take (ReportEntry.options) is a ReportOptionError naming the report. `correction` (the judge's measured error
    rates) adds corrected follow-up rates."""
    kind = KINDS.entry(run.kind or KINDS.names()[0])
    entry = REPORTS.entry(kind.report)
    given = {k: v for k, v in options.items() if v is not None}
    if unread := sorted(set(given) - set(entry.options)):
        raise ReportOptionError(f"the {entry.name} report has no {', '.join(unread)}")
    frame = entry.build(run, **given)
    judge = run.judge
    if correction is None or judge is None:
        return frame
    if judge.judge == REVIEWED:
        from testbed.analysis.judge_quality.review_correction import with_reviewed_corrected_rates

        return with_reviewed_corrected_rates(frame, run.store, run.run_id, judge, correction)
    return with_corrected_rates(frame, correction)


def with_corrected_rates(frame: pd.DataFrame, rates) -> pd.DataFrame:
    """The report with the follow-up rate corrected for the judge's measured errors beside the raw one.

    `rates` (testbed.analysis.judge_quality.correction.JudgeErrorRates) are the judge's follow-up error counts on
    a labelled set, named in `corrected_with`; the interval carries both this run's sampling error
    and the uncertainty of those rates.
    """
    from testbed.analysis.judge_quality.correction import corrected_rate

    if "followup_rate" not in frame or frame.empty:
        return frame
    rows = []
    for judged, rate in zip(frame.judged, frame.followup_rate):
        n = int(judged) if judged == judged else 0
        out = corrected_rate(round(rate * n) if n else 0, n, rates)
        rows.append((out.corrected, out.lo, out.hi))
    corrected = pd.DataFrame(rows, columns=["followup_corrected", "corrected_lo", "corrected_hi"], index=frame.index)
    at = list(frame.columns).index("followup_rate") + 1
    while at < len(frame.columns) and frame.columns[at] in ("followup_lo", "followup_hi"):
        at += 1
    out = pd.concat([frame.iloc[:, :at], corrected, frame.iloc[:, at:]], axis=1)
    out["corrected_with"] = rates.source
    return out


def probe_report(run: RunFrames) -> pd.DataFrame:
    """The probe's report of a run's frames under their judge: one row per condition group, perturbation included."""
    frame = episode_table(run)
    if run.judge is not None:
        labels = run.labels.rename(columns={
            "turn_index": "user_turn_index", "status": "judge_status", "label": "judge_label", "followup": "judge_followup"})
        frame = frame.merge(labels[["episode_id", "user_turn_index", "judge_status", "judge_label", "judge_followup"]],
                            on=["episode_id", "user_turn_index"], how="left")
    if frame.empty:
        return pd.DataFrame(columns=GROUP + EPISODE_COLUMNS + (judge_columns() if "judge_status" in frame else []))
    return pd.DataFrame(_group_rows(frame))


def _group_rows(frame: pd.DataFrame) -> list[dict]:
    """One row per condition group, from one grouped sum over the run (a study has thousands of groups).

    Rates exclude errored episodes; the judge's exclude unscored turns too. Accuracy is over
    episodes with a task score; user-turn words, tokens, blanks and restatements over finished
    episodes; label shares over scored turns with an 8-way label. Every figure is a count or a sum
    of whole numbers (task scores are 0 or 1) divided by a count.
    """
    done = frame.status == "done"
    parts = {
        "episodes": pd.Series(1, index=frame.index), "errors": frame.status == "error", "done": done,
        "scored": frame.task_score.notna(), "correct": frame.task_score.fillna(0),
        "words": frame.user_turn_words.where(done, 0), "tokens": frame.user_turn_tokens.where(done),
        "has_tokens": done & frame.user_turn_tokens.notna(),
        "empty": done & frame.user_turn.fillna("").str.strip().eq(""), "same": done & frame.identical_to_question.astype(bool),
    }
    labels = taxonomy().labels
    judged = "judge_status" in frame
    if judged:
        scored = done & (frame.judge_status == "scored")
        labelled = scored & frame.judge_label.notna()
        parts.update({"judged": scored, "unscored": done & (frame.judge_status == "unscored"), "unjudged": done & frame.judge_status.isna(),
                      "followups": scored & frame.judge_followup.fillna(0).astype(bool), "labelled": labelled})
        parts.update({f"label:{label}": labelled & (frame.judge_label == label) for label in labels})
    keys = [frame[c] for c in GROUP]
    sums = pd.DataFrame(parts).groupby(keys, sort=True, dropna=False).sum()
    rows = []
    for group, s in zip(sums.index, sums.to_dict("records")):
        n_done, graded, correct, same = int(s["done"]), int(s["scored"]), int(s["correct"]), int(s["same"])
        acc_lo, acc_hi = wilson_interval(correct, graded)
        same_lo, same_hi = wilson_interval(same, n_done)
        row = {
            **dict(zip(GROUP, group)),
            "episodes": int(s["episodes"]), "errors": int(s["errors"]), "scored": graded,
            "accuracy": correct / graded if graded else math.nan, "accuracy_lo": acc_lo, "accuracy_hi": acc_hi,
            "user_turn_words": float(s["words"] / n_done) if n_done else math.nan,
            "user_turn_tokens": float(s["tokens"] / s["has_tokens"]) if s["has_tokens"] else math.nan,
            "empty_user_turns": int(s["empty"]),
            "identical_to_question": same / n_done if n_done else math.nan, "identical_lo": same_lo, "identical_hi": same_hi,
        }
        if judged:
            n, followups, labelled = int(s["judged"]), int(s["followups"]), int(s["labelled"])
            lo, hi = wilson_interval(followups, n)
            row.update({"judged": n, "unscored": int(s["unscored"]), "unjudged": int(s["unjudged"]),
                        "followup_rate": followups / n if n else math.nan, "followup_lo": lo, "followup_hi": hi})
            row.update({f"share_{label}": float(s[f"label:{label}"] / labelled) if labelled else math.nan for label in labels})
        rows.append(row)
    return rows


PROBE_REPORT = ReportEntry("probe", probe_report)
"""The probe's report entry."""
