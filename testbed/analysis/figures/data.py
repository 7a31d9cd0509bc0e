"""The numbers behind `testbed plot`'s figures, one frame per figure, or the reason it is skipped.

Every rate here is over *scored* user turns of *finished* episodes: errored episodes and turns the
judge left unscored (or never judged) are excluded, and each frame counts them
(`errored_episodes`, `unscored`, `unjudged`) so the exclusion stays visible. Every interval is a
Wilson 95 % interval (`testbed.analysis.stats.wilson_interval`). The frames are exactly what the
drawings plot and what `write_figures` saves as CSV beside each PNG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from testbed.analysis.drift import frames_drift, survival_curve
from testbed.analysis.figures.registry import FigureInputs
from testbed.analysis.frames import episode_table, normalise, run_frames
from testbed.analysis.perturbation import PAIR
from testbed.analysis.stats import wilson_interval
from testbed.judges.taxonomy import taxonomy
from testbed.scenarios.human_reference import HUMAN_MODE
from testbed.specs.registries import FIGURES, FigureEntry
from testbed.store import Store
from testbed.store.labels import JudgeIdentity
from testbed.store.run_frames import RunFrames
from testbed.transcript import ASSISTANT

__all__ = ["FIGURES", "PAIR", "FigureData", "FigureInputs", "answer_accuracy", "figure_data", "figures_of", "no_labels_reason",
           "finished_turns"]

_DRAWING = "testbed.analysis.figures.drawing"


@dataclass(frozen=True)
class FigureData:
    """One figure's numbers: `frame` holds exactly what is drawn; `skipped` says why nothing is, when so."""

    name: str
    """The figure's name, also the stem of its PNG and CSV files."""
    frame: pd.DataFrame
    """The numbers drawn (empty when skipped)."""
    title: str
    """What is plotted, the run id and the judge identity."""
    skipped: str | None = None
    """Why the figure cannot be drawn for this run and judge; None when it can."""


def title_of(figure: FigureEntry, run_id: str, judge: JudgeIdentity | None) -> str:
    """The figure title: what is plotted — run — judge."""
    return f"{figure.title} — run {run_id} — judge {judge if judge is not None else 'none'}"


def no_labels_reason(judge: JudgeIdentity | str | None, run_id: str) -> str:
    """The skip reason of every figure when the judge has no labels on the run."""
    return f"no labels from judge {judge if judge is not None else '(none given)'} — run `testbed judge {run_id}`"


def _rate(followups: int, n: int) -> dict:
    lo, hi = wilson_interval(followups, n)
    return {"followups": followups, "followup_rate": followups / n if n else math.nan, "followup_lo": lo, "followup_hi": hi}


def _turn_counts(g: pd.DataFrame) -> dict:
    """Counts and the follow-up rate of a group of turns of finished episodes."""
    scored = g[g.judge_status == "scored"]
    return {"turns": len(g), "scored": len(scored), "unscored": int((g.judge_status == "unscored").sum()),
            "unjudged": int(g.judge_status.isna().sum()),
            **_rate(int(scored.judge_followup.fillna(0).astype(bool).sum()), len(scored))}


def finished_turns(run: RunFrames) -> pd.DataFrame:
    """Every generated user turn of the run's finished episodes with its conditions and the judge's
    latest verdict (`judge_status`, `judge_label`, `judge_followup`; NaN where it gave none)."""
    turns = run.judged_turns
    return turns[turns.status == "done"]


def _errored(episodes: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Errored episodes per group, as a frame to merge on `keys`."""
    errors = episodes.assign(errored_episodes=(episodes.status == "error").astype(int))
    return errors.groupby(keys, as_index=False, dropna=False).errored_episodes.sum()


def _answer_keys(run: RunFrames) -> pd.Series:
    """Per episode, the generated answer its task score belongs to: the shared answer it reused (a
    probe's one answer per item), else the episode itself (a dialogue writes its own answers)."""
    messages = run.messages
    reused = messages[(messages.role == ASSISTANT) & messages.reused_from.notna()]
    return reused.groupby("episode_id").reused_from.first()


ACCURACY_COLUMNS = ["assistant_model", "dataset", "answers", "correct", "accuracy", "accuracy_lo", "accuracy_hi"]
"""What `answer_accuracy` gives per assistant model and dataset."""


def answer_accuracy(run: RunFrames) -> pd.DataFrame:
    """Task accuracy per (assistant_model, dataset) of a run's frames, each generated answer counted once.

    A probe's answer is generated once per item and shared by every user-turn variant (user mode ×
    temperature × sample × perturbation), so its score is stored on each of those episodes; counted
    per episode, an item with more finished variants would weigh more and the interval would be
    far too narrow. Episodes that reused one answer count as one, under the key (assistant_model,
    dataset, item_id, answer); an episode that reused nothing (a dialogue) is its own answer.
    Episodes without a task score (unscorable items) are left out; `answers` counts the rest, and
    an answer is correct when its score is 1.0 (a partial score counts as not correct).
    """
    episodes = episode_table(run)
    scored = episodes[episodes.task_score.notna()]
    answer = scored.episode_id.map(_answer_keys(run)).fillna(scored.episode_id)
    answers = scored.assign(answer=answer).drop_duplicates(["assistant_model", "dataset", "item_id", "answer"])
    rows = []
    for (model, dataset), g in answers.groupby(["assistant_model", "dataset"], sort=True):
        correct = int((g.task_score >= 1.0).sum())
        lo, hi = wilson_interval(correct, len(g))
        rows.append({"assistant_model": model, "dataset": dataset, "answers": len(g), "correct": correct,
                     "accuracy": correct / len(g), "accuracy_lo": lo, "accuracy_hi": hi})
    return pd.DataFrame(rows, columns=ACCURACY_COLUMNS)


Built = tuple[pd.DataFrame, str | None]
"""A figure's frame and its skip reason (None when it can be drawn)."""


def accuracy_vs_followup(inputs: FigureInputs) -> Built:
    """One point per (assistant_model, dataset): task accuracy against the follow-up rate of its
    unperturbed scored user turns.

    Which user turns a point's follow-up rate counts: when the same model also wrote user turns
    (user_model == assistant_model, one model playing both roles), only those, so the point says
    how well a model answers against how well *it* plays the user; otherwise every unperturbed
    turn written against that assistant, whoever the user model was. `self_play` and
    `user_models` in the frame say which applied.
    """
    turns, episodes = inputs.turns, inputs.episodes
    accuracy = answer_accuracy(inputs.run)
    base = turns[(turns.perturbation == "none") & (turns.user_mode != HUMAN_MODE)]
    rows = []
    for row in accuracy.itertuples(index=False):
        mine = base[(base.assistant_model == row.assistant_model) & (base.dataset == row.dataset)]
        own = mine[mine.user_model == row.assistant_model]
        chosen = own if len(own) else mine
        bad = episodes[(episodes.assistant_model == row.assistant_model) & (episodes.dataset == row.dataset)
                       & (episodes.perturbation == "none") & (episodes.status == "error")]
        if len(own):
            bad = bad[bad.user_model == row.assistant_model]
        rows.append({**row._asdict(), "self_play": bool(len(own)), "user_models": "; ".join(sorted(set(chosen.user_model))),
                     "errored_episodes": len(bad), **_turn_counts(chosen)})
    frame = pd.DataFrame(rows)
    drawn = frame[frame.accuracy.notna() & frame.followup_rate.notna()] if len(frame) else frame
    if len(drawn) < 2:
        return drawn.iloc[0:0], (f"needs 2 (assistant model, dataset) points with both task accuracy and a follow-up rate; "
                                 f"this run has {len(drawn)}")
    return drawn.reset_index(drop=True), None


ACCURACY_VS_FOLLOWUP = FigureEntry("accuracy_vs_followup", "Task accuracy vs follow-up rate", accuracy_vs_followup,
                                   f"{_DRAWING}:draw_accuracy_vs_followup")
"""The figure of `accuracy_vs_followup`: one point per assistant model and dataset."""


def followup_vs_temperature(inputs: FigureInputs) -> Built:
    """Follow-up rate of unperturbed scored user turns per dataset × user model × user mode ×
    user temperature (the sampling temperature of the simulated user, not the assistant).

    Human-reference turns (user mode `human`) are no simulated curve: when a dataset has them, every
    row of it carries the real users' follow-up rate (`real_users_*`, NaN otherwise), drawn as a line."""
    turns, episodes = inputs.turns, inputs.episodes
    unperturbed = turns[turns.perturbation == "none"]
    base = unperturbed[unperturbed.user_mode != HUMAN_MODE]
    episodes = episodes[episodes.user_mode != HUMAN_MODE]
    temperatures = sorted(base.temperature.unique())
    if len(temperatures) < 2:
        shown = ", ".join(f"{t:g}" for t in temperatures) or "none"
        return pd.DataFrame(), f"needs 2 user temperatures; this run has {len(temperatures)} ({shown})"
    keys = ["dataset", "user_model", "user_mode", "temperature"]
    rows = [{**dict(zip(keys, k)), **_turn_counts(g)} for k, g in base.groupby(keys, sort=True)]
    frame = pd.DataFrame(rows).merge(_errored(episodes[episodes.perturbation == "none"], keys), on=keys, how="left")
    frame["errored_episodes"] = frame.errored_episodes.fillna(0).astype(int)
    if not (frame.scored > 0).any():
        return frame.iloc[0:0], "no scored unperturbed user turns"
    return frame.merge(_real_users_followup(unperturbed[unperturbed.user_mode == HUMAN_MODE]), on="dataset", how="left"), None


FOLLOWUP_VS_TEMPERATURE = FigureEntry("followup_vs_temperature", "Follow-up rate vs user temperature", followup_vs_temperature,
                                      f"{_DRAWING}:draw_followup_vs_temperature")
"""The figure of `followup_vs_temperature`: one line per dataset, user model and user mode."""


REAL_USERS_COLUMNS = ["dataset", "real_users_scored", "real_users_followup_rate", "real_users_followup_lo",
                      "real_users_followup_hi"]
"""The real users' follow-up rate per dataset that `followup_vs_temperature` adds to its rows."""


def _real_users_followup(human: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, the follow-up rate of the human-reference turns the judge scored (no row when it scored none)."""
    rows = []
    for dataset, g in human.groupby("dataset", sort=True):
        counts = _turn_counts(g)
        if counts["scored"]:
            rows.append({"dataset": dataset, "real_users_scored": counts["scored"],
                         "real_users_followup_rate": counts["followup_rate"],
                         "real_users_followup_lo": counts["followup_lo"], "real_users_followup_hi": counts["followup_hi"]})
    return pd.DataFrame(rows, columns=REAL_USERS_COLUMNS)


def _paired(run: RunFrames) -> pd.DataFrame:
    """Every perturbed finished episode beside its unperturbed twin (`PAIR`), with both follow-ups under the run's judge."""
    frame = episode_table(run)
    frame = frame[frame.status == "done"]
    labels = run.labels
    labels = labels[labels.status == "scored"][["episode_id", "turn_index", "followup"]]
    frame = frame.merge(labels, left_on=["episode_id", "user_turn_index"], right_on=["episode_id", "turn_index"], how="left")
    base = frame[frame.perturbation == "none"]
    return frame[frame.perturbation != "none"].merge(base, on=PAIR, suffixes=("", "_base"))


def perturbation_effects(inputs: FigureInputs) -> Built:
    """Per user model × perturbation, over pairs of episodes that saw the same answer unperturbed
    and perturbed (across user modes and temperatures): the share of user turns that changed, and
    the follow-up rate before and after on the pairs where both turns were scored."""
    perturbations = sorted(set(inputs.episodes.perturbation) - {"none"})
    if not perturbations:
        return pd.DataFrame(), "the run has no perturbation other than none"
    pairs = _paired(inputs.run)
    if pairs.empty:
        return pd.DataFrame(), f"no finished perturbed episode ({', '.join(perturbations)}) has a finished unperturbed twin"
    rows = []
    for (model, name), g in pairs.groupby(["user_model", "perturbation"], sort=True):
        changed = sum(normalise(a) != normalise(b) for a, b in zip(g.user_turn.fillna(""), g.user_turn_base.fillna("")))
        c_lo, c_hi = wilson_interval(changed, len(g))
        judged = g[g.followup.notna() & g.followup_base.notna()]
        n, before, after = len(judged), int(judged.followup_base.astype(bool).sum()), int(judged.followup.astype(bool).sum())
        b_lo, b_hi = wilson_interval(before, n)
        a_lo, a_hi = wilson_interval(after, n)
        rows.append({"user_model": model, "perturbation": name, "pairs": len(g), "changed_turns": changed,
                     "changed": changed / len(g), "changed_lo": c_lo, "changed_hi": c_hi, "judged_pairs": n,
                     "followup_none": before / n if n else math.nan, "followup_none_lo": b_lo, "followup_none_hi": b_hi,
                     "followup_perturbed": after / n if n else math.nan, "followup_perturbed_lo": a_lo,
                     "followup_perturbed_hi": a_hi})
    return pd.DataFrame(rows), None


PERTURBATION_EFFECTS = FigureEntry("perturbation_effects", "Follow-up rate before → after perturbing the answer", perturbation_effects,
                                   f"{_DRAWING}:draw_perturbation_effects")
"""The figure of `perturbation_effects`: before and after per user model and perturbation."""


def failure_modes(inputs: FigureInputs) -> Built:
    """Share of each taxonomy label among the unperturbed user turns the judge gave an 8-way label,
    per user model × user mode; `labelled` is the denominator, `scored_without_label` counts the
    binary verdicts (follow-up yes/no, no label) left out of it."""
    turns = inputs.turns
    base = turns[turns.perturbation == "none"]
    scored = base[base.judge_status == "scored"]
    if scored.empty:
        return pd.DataFrame(), "no scored unperturbed user turns"
    if scored.judge_label.isna().all():
        return pd.DataFrame(), "the judge gave no 8-way labels (a binary follow-up judge): use a judge with the taxonomy"
    rows = []
    for (model, mode), g in base.groupby(["user_model", "user_mode"], sort=True):
        labelled = g[(g.judge_status == "scored") & g.judge_label.notna()]
        if labelled.empty:
            continue
        row = {"user_model": model, "user_mode": mode, "labelled": len(labelled),
               "scored_without_label": int(((g.judge_status == "scored") & g.judge_label.isna()).sum()),
               "unscored": int((g.judge_status == "unscored").sum()), "unjudged": int(g.judge_status.isna().sum())}
        for label in taxonomy().labels:
            row[f"count_{label}"] = int((labelled.judge_label == label).sum())
        for label in taxonomy().labels:
            row[f"share_{label}"] = row[f"count_{label}"] / len(labelled)
        rows.append(row)
    return pd.DataFrame(rows), None


FAILURE_MODES = FigureEntry("failure_modes", "Labels of unperturbed user turns", failure_modes,
                            f"{_DRAWING}:draw_failure_modes")
"""The figure of `failure_modes`: the label mix per user model and user mode."""


def survival(inputs: FigureInputs) -> Built:
    """Kaplan–Meier share of episodes still in role after k generated user turns, per user model.

    Drawn only when some episode has more than one generated user turn: with one turn per episode
    (the probe) there is no "later" to survive to, whatever the run's kind is called.
    """
    onsets = frames_drift(inputs.run)
    if onsets.empty or int(onsets.user_turns.max()) <= 1:
        return pd.DataFrame(), ("episodes have at most one generated user turn (probe episodes have one user turn): "
                                "no survival over turns")
    if not (onsets.scored_turns > 0).any():
        return pd.DataFrame(), "no user turn has an 8-way label from this judge, so drift cannot be told"
    top = int(onsets.observed_turns.max())
    curves = [survival_curve(g, top).assign(user_model=model, episodes=len(g))
              for model, g in onsets.groupby("user_model", sort=True)]
    frame = pd.concat(curves, ignore_index=True)
    return frame[["user_model", "episodes", "k", "at_risk", "drifted_at_k", "censored_at_k", "survival"]], None


SURVIVAL = FigureEntry("survival", "In-role survival over user turns", survival,
                       f"{_DRAWING}:draw_survival_figure")
"""The figure of `survival`: one Kaplan–Meier curve per user model."""


def figure_data(store: Store, run_id: str, judge: JudgeIdentity | None) -> list[FigureData]:
    """`figures_of` a run (full id) under one judge's labels, its frames read once (within `shared_reads`, shared)."""
    return figures_of(run_frames(store, run_id, judge))


def figures_of(run: RunFrames) -> list[FigureData]:
    """Every figure of `FIGURES`, in that order, for a run's frames under their judge's labels.

    With no judge, or a judge that labelled none of the run's turns, every figure that needs the labels
    is skipped with the same reason; the others (`needs_labels=False`) are built as ever.
    """
    run_id, judge = run.run_id, run.judge
    labelled = judge is not None and not run.labels.empty
    if not labelled and all(f.needs_labels for f in FIGURES):
        reason = no_labels_reason(judge, run_id)
        return [FigureData(f.name, pd.DataFrame(), title_of(f, run_id, judge), reason) for f in FIGURES]
    turns = finished_turns(run) if labelled else pd.DataFrame()
    shown = run if labelled else run.with_judge(None)
    inputs = FigureInputs(run.store, run_id, shown.judge, turns, run.episodes, shown)
    out = []
    for figure in FIGURES:
        if figure.needs_labels and not labelled:
            out.append(FigureData(figure.name, pd.DataFrame(), title_of(figure, run_id, judge), no_labels_reason(judge, run_id)))
            continue
        frame, skipped = figure.build(inputs)
        drawn = frame if skipped is None else frame.iloc[0:0]
        out.append(FigureData(figure.name, drawn, title_of(figure, run_id, judge), skipped))
    return out
