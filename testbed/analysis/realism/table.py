"""How human is a simulated user's next turn? Simulated turns against the real ones on the same contexts.

A context is a real conversation up to an assistant turn; its reference is the real user turn
that followed. `realism_table` compares each simulated condition (user model, mode, temperature)
with the references on the contexts both have: the judge's label mix (Jensen–Shannon divergence),
follow-up rates, a cross-validated discriminator's AUC with the features that give the simulator
away, embedding similarity to the reference, the length ratio, and shares a reader checks by eye.
`human_baseline` is the real users' row: how often they follow up, restate, ask something new,
say thanks. Everything here is pure analysis over a turns frame; intervals come from a bootstrap
over contexts (`realism_measures`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from testbed.analysis.realism.discriminator import PERMUTATIONS, discriminate
from testbed.analysis.realism.features import SURFACE_FEATURES, feature_matrix, word_counts
from testbed.analysis.realism.followup_correction import (
    CORRECTED_WITH,
    FollowupCorrection,
    corrected_columns,
    corrected_followup,
)
from testbed.analysis.realism.measures import (
    bootstrap_jsd,
    bootstrap_median,
    bootstrap_ratio_of_sums,
    context_resample_weights,
)
from testbed.analysis.stats import wilson_interval
from testbed.judges.taxonomy import LABELS

realism_frame_columns: tuple[str, ...] = (
    "context_id", "source", "user_model", "user_mode", "temperature", "text", "answer", "question", "label", "followup",
)
"""The columns a turns frame must have (one row per user turn, real or simulated); extra columns are ignored, but for
`reviewed` (optional, True where a reviewer rather than the fast judge decided the turn's label), which the follow-up
correction reads."""
CONDITION_COLUMNS: tuple[str, ...] = ("user_model", "user_mode", "temperature")
"""What names a simulated condition: one row of the realism table each."""
REAL_SOURCE = "real"
"""The `source` of a human reference turn; every other source is simulated."""
REALISM_COLUMNS: list[str] = [
    *CONDITION_COLUMNS, "contexts", "simulated", "real",
    "jsd", "jsd_lo", "jsd_hi",
    "followup_sim", "followup_sim_lo", "followup_sim_hi", "followup_real", "followup_real_lo", "followup_real_hi",
    "auc", "auc_lo", "auc_hi", "auc_p", "giveaways",
    "cosine", "cosine_lo", "cosine_hi",
    "length_ratio", "length_ratio_lo", "length_ratio_hi",
    "words_sim", "words_real", "question_sim", "question_real", "thanks_sim", "thanks_real",
    "code_sim", "code_real", "non_english_sim", "non_english_real",
]
"""The realism table's columns, in order; `with_correction_columns` adds the corrected follow-up rates."""
BASELINE_INTERVAL_LABELS: tuple[str, ...] = ("genuine_followup", "restate_question", "new_question", "short_filler")
"""The labels whose human share `human_baseline` reports with a Wilson interval."""
HUMAN_BASELINE_COLUMNS: list[str] = [
    "turns", "followup", "followup_lo", "followup_hi",
    *[c for label in LABELS
      for c in ((f"share_{label}", f"share_{label}_lo", f"share_{label}_hi") if label in BASELINE_INTERVAL_LABELS
                else (f"share_{label}",))],
    "thanks", "question", "words",
]
"""The human baseline's columns, in order; `with_correction_columns` adds the corrected follow-up rate."""


def with_correction_columns(columns: list[str]) -> list[str]:
    """`columns` with each follow-up rate's corrected rate and interval after its own interval, and `corrected_with`
    last: the realism table's and the human baseline's columns when the judge's error rates are known."""
    out = []
    for column in columns:
        out.append(column)
        if column in ("followup_sim_hi", "followup_real_hi"):
            out += corrected_columns(column.split("_")[1])
        elif column == "followup_hi":
            out += ["followup_corrected", "followup_corrected_lo", "followup_corrected_hi"]
    return [*out, CORRECTED_WITH]


@dataclass(frozen=True)
class PreparedTurns:
    """A turns frame in a stable order with everything computed once per row, shared by all conditions."""

    frame: pd.DataFrame
    """The turns sorted by a stable key, one real row per context, index 0..n-1."""
    context_codes: np.ndarray
    """Each row's context as an integer, in sorted order of `context_id`."""
    is_real: np.ndarray
    """True for a human reference row."""
    features: np.ndarray
    """The discriminator's feature matrix (rows × `SURFACE_FEATURES`)."""
    words: np.ndarray
    """Words per turn."""
    label_codes: np.ndarray
    """Index of each turn's label in `LABELS`, -1 when unjudged or not a taxonomy label."""
    followup_judged: np.ndarray
    """True where the follow-up decision is known."""
    followup: np.ndarray
    """The follow-up decision (False where unjudged)."""
    reviewed: np.ndarray
    """True where a reviewer decided the turn's label (the frame's optional `reviewed` column), False elsewhere."""
    embeddings: np.ndarray | None
    """Unit-length embedding per turn, or None without an embedder."""


def _check_columns(turns: pd.DataFrame) -> None:
    missing = [c for c in realism_frame_columns if c not in turns.columns]
    if missing:
        raise ValueError(f"turns frame lacks column(s) {', '.join(missing)}; needs {', '.join(realism_frame_columns)}")


def _stable_order(turns: pd.DataFrame) -> pd.DataFrame:
    keys = ["context_id", "source", *CONDITION_COLUMNS, "text", "question", "answer", "label", "followup"]
    as_text = pd.DataFrame({k: turns[k].astype(str).fillna("\x00missing") for k in keys}).reset_index(drop=True)
    order = as_text.sort_values(keys, kind="stable").index.to_numpy()
    ordered = turns.iloc[order].reset_index(drop=True)
    real = ordered["source"].astype(str) == REAL_SOURCE
    repeated_real = real & ordered["context_id"].astype(str).where(real).duplicated()
    return ordered.loc[~repeated_real].reset_index(drop=True)


def unit_embeddings(texts: pd.Series, embedder) -> np.ndarray:
    """Each text's embedding, L2-normalised (zeros stay zeros), encoding each distinct text once."""
    codes, uniques = pd.factorize(texts.fillna("").astype(str))
    vectors = np.asarray(embedder.encode(list(uniques)), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return vectors[codes]


def prepare_turns(turns: pd.DataFrame, embedder=None) -> PreparedTurns:
    """Sort the turns by a stable key (so row order never matters), keep one reference per context, featurise."""
    _check_columns(turns)
    frame = _stable_order(turns)
    label_codes = pd.Categorical(frame["label"].where(frame["label"].isin(LABELS)), categories=list(LABELS)).codes
    followup = frame["followup"]
    judged = followup.notna().to_numpy(dtype=bool)
    context_codes, _ = pd.factorize(frame["context_id"].astype(str), sort=True)
    return PreparedTurns(
        frame=frame,
        context_codes=np.asarray(context_codes, dtype=np.int64),
        is_real=(frame["source"].astype(str) == REAL_SOURCE).to_numpy(dtype=bool),
        features=feature_matrix(frame).to_numpy(dtype=np.float64),
        words=word_counts(frame["text"]),
        label_codes=np.asarray(label_codes, dtype=np.int64),
        followup_judged=judged,
        followup=followup.where(judged, False).astype(bool).to_numpy(),
        reviewed=(frame["reviewed"].fillna(False).astype(bool).to_numpy() if "reviewed" in frame
                  else np.zeros(len(frame), dtype=bool)),
        embeddings=None if embedder is None else unit_embeddings(frame["text"], embedder),
    )


def _feature_share(prepared: PreparedTurns, rows: np.ndarray, key: str) -> float:
    column = [f.key for f in SURFACE_FEATURES].index(key)
    values = prepared.features[rows, column]
    return float((values > 0).mean()) if len(rows) else math.nan


def _per_context(values: np.ndarray, row_context: np.ndarray, contexts: int) -> np.ndarray:
    return np.bincount(row_context, weights=values, minlength=contexts)


def _label_counts(codes: np.ndarray, row_context: np.ndarray, contexts: int) -> np.ndarray:
    judged = codes >= 0
    flat = row_context[judged] * len(LABELS) + codes[judged]
    return np.bincount(flat, minlength=contexts * len(LABELS)).reshape(contexts, len(LABELS)).astype(np.float64)


def _followup_rate(prepared: PreparedTurns, rows: np.ndarray) -> tuple[float, float, float]:
    judged = rows[prepared.followup_judged[rows]]
    n = len(judged)
    yes = int(prepared.followup[judged].sum())
    lo, hi = wilson_interval(yes, n)
    return (yes / n if n else math.nan, lo, hi)


def _corrected_followup(prepared: PreparedTurns, rows: np.ndarray,
                        correction: FollowupCorrection) -> tuple[float, float, float]:
    judged = rows[prepared.followup_judged[rows]]
    return corrected_followup(prepared.followup[judged], prepared.reviewed[judged], correction)


@dataclass(frozen=True)
class SharedContexts:
    """One condition's rows restricted to the contexts that have both simulated turns and a reference."""

    simulated: np.ndarray
    """Row numbers of the condition's simulated turns on shared contexts."""
    real: np.ndarray
    """Row numbers of the references on those contexts."""
    simulated_context: np.ndarray
    """Each simulated row's context as 0..contexts-1."""
    real_context: np.ndarray
    """Each reference row's context as 0..contexts-1."""
    contexts: int
    """How many contexts both sides have."""


def shared_contexts(prepared: PreparedTurns, simulated_rows: np.ndarray) -> SharedContexts:
    """The simulated rows and references on contexts both have, contexts numbered in sorted id order."""
    codes = prepared.context_codes
    real_rows = np.flatnonzero(prepared.is_real)
    has_real = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=bool)
    has_real[codes[real_rows]] = True
    has_sim = np.zeros_like(has_real)
    has_sim[codes[simulated_rows]] = True
    shared = np.flatnonzero(has_real & has_sim)
    position = np.full(len(has_real), -1, dtype=np.int64)
    position[shared] = np.arange(len(shared))
    sim = simulated_rows[has_real[codes[simulated_rows]]]
    real = real_rows[has_sim[codes[real_rows]]]
    return SharedContexts(sim, real, position[codes[sim]], position[codes[real]], len(shared))


def _cosine(prepared: PreparedTurns, on: SharedContexts, weights: np.ndarray) -> tuple[float, float, float]:
    if prepared.embeddings is None or not on.contexts:
        return (math.nan, math.nan, math.nan)
    reference = np.zeros((on.contexts, prepared.embeddings.shape[1]), dtype=np.float32)
    reference[on.real_context] = prepared.embeddings[on.real]
    cosines = np.einsum("ij,ij->i", prepared.embeddings[on.simulated], reference[on.simulated_context])
    turns = np.bincount(on.simulated_context, minlength=on.contexts).astype(np.float64)
    return bootstrap_ratio_of_sums(_per_context(cosines.astype(np.float64), on.simulated_context, on.contexts),
                                   turns, weights)


def _length_ratio(prepared: PreparedTurns, on: SharedContexts, weights: np.ndarray) -> tuple[float, float, float]:
    n = on.contexts
    sim_words = np.maximum(prepared.words[on.simulated], 1).astype(np.float64)
    real_words = np.maximum(prepared.words[on.real], 1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        sim_mean = _per_context(sim_words, on.simulated_context, n) / np.bincount(on.simulated_context, minlength=n)
        real_mean = _per_context(real_words, on.real_context, n) / np.bincount(on.real_context, minlength=n)
    return bootstrap_median(sim_mean / real_mean, weights)


def condition_row(prepared: PreparedTurns, simulated_rows: np.ndarray, *, seed: int, folds: int,
                  resamples: int, permutations: int = PERMUTATIONS, stream: int = 0,
                  correction: FollowupCorrection | None = None) -> dict[str, object]:
    """The realism measures of one condition's simulated rows against the references on the contexts both have.

    `stream` separates the bootstrap draws of conditions sharing one `seed`; `correction` adds the
    corrected follow-up rates.
    """
    on = shared_contexts(prepared, simulated_rows)
    sim, real, sim_context, real_context, n = on.simulated, on.real, on.simulated_context, on.real_context, on.contexts
    weights = context_resample_weights(n, resamples, np.random.default_rng([seed, stream])).astype(np.float64)

    jsd = bootstrap_jsd(_label_counts(prepared.label_codes[sim], sim_context, n),
                        _label_counts(prepared.label_codes[real], real_context, n), weights)
    rows = np.concatenate([sim, real])
    is_sim = np.r_[np.ones(len(sim), dtype=np.int64), np.zeros(len(real), dtype=np.int64)]
    verdict = discriminate(prepared.features[rows], is_sim, np.r_[sim_context, real_context],
                           folds=folds, seed=seed, permutations=permutations)

    cosine = _cosine(prepared, on, weights)
    length_ratio = _length_ratio(prepared, on, weights)

    row: dict[str, object] = {"contexts": n, "simulated": len(sim), "real": len(real)}
    row.update(zip(("jsd", "jsd_lo", "jsd_hi"), jsd, strict=True))
    row.update(zip(("followup_sim", "followup_sim_lo", "followup_sim_hi"), _followup_rate(prepared, sim), strict=True))
    row.update(zip(("followup_real", "followup_real_lo", "followup_real_hi"), _followup_rate(prepared, real), strict=True))
    if correction is not None:
        row.update(zip(corrected_columns("sim"), _corrected_followup(prepared, sim, correction), strict=True))
        row.update(zip(corrected_columns("real"), _corrected_followup(prepared, real, correction), strict=True))
        row[CORRECTED_WITH] = correction.described
    row.update(auc=verdict.auc, auc_lo=verdict.auc_lo, auc_hi=verdict.auc_hi, auc_p=verdict.auc_p,
               giveaways=verdict.giveaways)
    row.update(zip(("cosine", "cosine_lo", "cosine_hi"), cosine, strict=True))
    row.update(zip(("length_ratio", "length_ratio_lo", "length_ratio_hi"), length_ratio, strict=True))
    row.update(words_sim=float(np.median(prepared.words[sim])) if len(sim) else math.nan,
               words_real=float(np.median(prepared.words[real])) if len(real) else math.nan)
    for name, key in (("question", "question_marks"), ("thanks", "thanks"), ("code", "code"),
                      ("non_english", "non_english")):
        row[f"{name}_sim"] = _feature_share(prepared, sim, key)
        row[f"{name}_real"] = _feature_share(prepared, real, key)
    return row


def realism_table(turns: pd.DataFrame, *, seed: int = 0, folds: int = 5, resamples: int = 1000,
                  permutations: int = PERMUTATIONS, embedder=None,
                  correction: FollowupCorrection | None = None) -> pd.DataFrame:
    """One row per simulated condition (sorted), comparing its turns with the real ones on the contexts both have.

    Columns are `REALISM_COLUMNS` (`with_correction_columns` of them with a `correction`). Intervals
    are 95 %: follow-up rates by Wilson, the AUC's by permutation, everything else by `resamples`
    bootstrap resamples of contexts (seeded by `seed`). `jsd` is the plug-in
    Jensen–Shannon divergence (bits) of the label mixes; it is biased upward at small n, two
    samples of one distribution giving about `realism_measures.plug_in_jsd_bias` (≈0.006 for 300
    vs 600 turns over 8 labels), so read a small JSD against that, not against 0; near zero its
    bootstrap interval lies mostly above the point for the same reason. `auc` is the
    discriminator's out-of-fold ROC AUC with contexts grouped into `folds` folds (NaN with fewer
    contexts than folds); `auc_p` is its one-sided p-value against `permutations` relabellings
    within each context, each refitting the cross-validation, and `auc_lo`–`auc_hi` the interval
    that holds 0.5 exactly when that two-sided test keeps the null (`realism_discriminator`; on
    human-against-human splits it holds 0.5 at the nominal 95 %, `benchmarks/realism_null.py`). A
    cross-validated AUC sits a little under 0.5 at no signal, so read the AUC with its p-value,
    not against 0.5 alone. `giveaways` are its three strongest standardised
    coefficients. `cosine` needs an `embedder` with `.encode(list[str]) -> array` (NaN without
    one); it rewards topical likeness to the reference (on the synthetic tests a simulator that
    repeats the question scored 0.37 against 0.34 for one replaying human turns), so read it
    beside the AUC, never alone. Label measures are NaN when a side has no labels. With the
    judge's measured error rates (`correction`), each side's follow-up rate is also given
    corrected for them (`followup_sim_corrected`, `followup_real_corrected`, with intervals, and
    `corrected_with`), as the run report corrects its own. A condition with no context shared with the real turns keeps its
    row, with `contexts` 0 and NaN measures. The result does not depend on the order of the rows;
    repeated real rows of a context count once.
    """
    _check_columns(turns)
    columns = REALISM_COLUMNS if correction is None else with_correction_columns(REALISM_COLUMNS)
    if turns.empty:
        return pd.DataFrame(columns=columns)
    prepared = prepare_turns(turns, embedder)
    frame = prepared.frame
    simulated = frame.loc[frame["source"].astype(str) != REAL_SOURCE]
    rows = []
    for stream, (condition, group) in enumerate(simulated.groupby(list(CONDITION_COLUMNS), sort=True, dropna=False)):
        measures = condition_row(prepared, group.index.to_numpy(), seed=seed, folds=folds, resamples=resamples,
                                 permutations=permutations, stream=stream, correction=correction)
        rows.append({**dict(zip(CONDITION_COLUMNS, condition, strict=True)), **measures})
    return pd.DataFrame(rows, columns=columns)


def human_baseline(turns: pd.DataFrame, correction: FollowupCorrection | None = None) -> pd.DataFrame:
    """The real users' row: how often they follow up, restate, ask something new, say thanks.

    All real rows, each context once. Follow-up and label shares are over judged turns (Wilson
    intervals for `BASELINE_INTERVAL_LABELS`); `thanks` and `question` are shares of all the real
    turns, `words` their median length. Columns are `HUMAN_BASELINE_COLUMNS`; with a `correction`,
    `with_correction_columns` of them (the follow-up rate corrected for the judge's errors).
    """
    _check_columns(turns)
    real = turns.loc[turns["source"].astype(str) == REAL_SOURCE]
    prepared = prepare_turns(real) if len(real) else None
    columns = HUMAN_BASELINE_COLUMNS if correction is None else with_correction_columns(HUMAN_BASELINE_COLUMNS)
    row: dict[str, object] = {c: math.nan for c in columns}
    row["turns"] = 0
    if correction is not None:
        row[CORRECTED_WITH] = correction.described
    if prepared is not None:
        everything = np.arange(len(prepared.frame))
        row["turns"] = len(everything)
        row["followup"], row["followup_lo"], row["followup_hi"] = _followup_rate(prepared, everything)
        if correction is not None:
            corrected = _corrected_followup(prepared, everything, correction)
            row["followup_corrected"], row["followup_corrected_lo"], row["followup_corrected_hi"] = corrected
        codes = prepared.label_codes
        judged = int((codes >= 0).sum())
        for index, label in enumerate(LABELS):
            count = int((codes == index).sum())
            row[f"share_{label}"] = count / judged if judged else math.nan
            if label in BASELINE_INTERVAL_LABELS:
                row[f"share_{label}_lo"], row[f"share_{label}_hi"] = wilson_interval(count, judged)
        row["thanks"] = _feature_share(prepared, everything, "thanks")
        row["question"] = _feature_share(prepared, everything, "question_marks")
        row["words"] = float(np.median(prepared.words))
    return pd.DataFrame([row], columns=columns)
