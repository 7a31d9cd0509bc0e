"""Training the learned judge: grouped cross-validation by conversation, a seeded fit, the model file.

Two model kinds: boosted trees (the default) and a linear model. Their settings and the follow-up threshold are
chosen on out-of-fold predictions of a GroupKFold by conversation (by question for the older files, whose rows
name no conversation), so no conversation's turns are both trained on and scored. Rows of the held-out split are
never read here. Nothing here reads the gold dev set: that is scored once, afterwards, by
`testbed eval-judge`. scikit-learn is needed to train only; judging uses the saved weights.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from testbed.analysis.judge_quality.agreement import cohen_kappa, compare, f1_binary
from testbed.analysis.judge_quality.correction import JudgeErrorRates
from testbed.judges.learned.decision import decide_label
from testbed.judges.learned.doubt import margin
from testbed.judges.learned.embedding import StaticEmbedder
from testbed.analysis.judge_quality.labelled_rows import HELD_OUT, group_of, judge_input, read_rows
from testbed.judges.learned.features import TURN, feature_names, featurise
from testbed.judges.learned.projection import META_KEY, Projection, fit_projection
from testbed.judges.learned.model import LinearModel
from testbed.judges.learned.trees import BoostedTrees
from testbed.judges.taxonomy import taxonomy

LINEAR_GRID = tuple({"C": c, "class_weight": w} for c in (0.01, 0.03, 0.1, 0.3, 1.0) for w in (None, "balanced"))
TREE_GRID = tuple({"learning_rate": lr, "max_iter": n, "max_leaf_nodes": leaves, "l2_regularization": 1.0}
                  for lr, n, leaves in ((0.05, 200, 15), (0.1, 100, 15)))
"""The two settings learned-3's search ranked first (its four were within 0.011 κ and 0.025 follow-up F1 of each
other, `judges/models/learned-3.json` meta `trials`); the other two were dropped because each setting costs five
grouped-CV fits, about 20 minutes on a shared 2-core machine."""
GRIDS = {"linear": LINEAR_GRID, "trees": TREE_GRID}
"""Model kinds and the settings cross-validation chooses among."""
FOLDS = 5
LEARNED_5 = {"projection_size": 8, "later_weight": 2.0}
"""learned-5's recipe, chosen by grouped CV on its training turns: the turn's embedding projected to 8 columns
(`testbed.judges.learned.projection`; 8 over 16, 32 and the whole embedding, κ on later turns 0.56, 0.54, 0.53, 0.51)
and turns labelled in their conversation (rows carrying `context`) weighted 2 (over 1, 3 and 5). It scored no better
than learned-4 on fresh held-out later turns (docs/judges.md), so it is not the default's model."""
SPENT_FOR_LEARNED_6 = ("labels-conversation-heldout.jsonl", "labels-conversation-heldout-2.jsonl")
"""The held-out parts learned-6 trains on (files in judges/training/), each scored once before: learned-6 is learned-4's
recipe with these 453 turns of the conversations the judge is weakest on added."""


@dataclass(frozen=True)
class Labelled:
    """Labelled turns as the trainer sees them: features (the whole embedding), labels, the question each turn answers."""

    x: np.ndarray
    labels: list[str]
    groups: list[str]
    rows: list[dict]
    embedding_columns: slice = field(default_factory=lambda: slice(0, 0))
    """Where the turn's embedding sits in `x`, for a projection to replace."""

    def weights(self, later_weight: float) -> np.ndarray | None:
        """Each row's sample weight: `later_weight` for a turn labelled in its conversation (it carries `context`), else 1;
        None when every weight is 1 (the fit then runs exactly as without weights)."""
        if later_weight == 1.0:
            return None
        return np.asarray([later_weight if "context" in r else 1.0 for r in self.rows])

    def projected(self, x: np.ndarray, projection: Projection | None) -> np.ndarray:
        """Rows of `x` with the embedding columns replaced by their projection (as `featurise` lays them out when judging)."""
        if projection is None:
            return x
        cols = self.embedding_columns
        return np.hstack([x[:, :cols.start], projection.apply(x[:, cols]), x[:, cols.stop:]])


def _paths(data: Path | Sequence[Path]) -> list[Path]:
    return [data] if isinstance(data, Path) else list(data)


def load_labelled(data: Path | Sequence[Path], embedder: StaticEmbedder, features: str = TURN, *, held_out: bool = False,
                  spent: Sequence[Path] = ()) -> Labelled:
    """Features and labels of labelled JSONL files, read in order (`labelled_rows`: detached text rebuilt, the
    conversation capped as when judging). Rows whose `split` is held out are left out, or, with `held_out`, are
    the only ones kept: the held-out part is scored once, at the end, and never chosen on. Files in `spent` are read
    whole after the rest: a held-out part already scored once is no longer an estimate, so it may be trained on."""
    rows = [r for r in read_rows(_paths(data)) if (r.get("split") == HELD_OUT) == held_out]
    rows += read_rows(list(spent)) if spent else []
    x, _ = featurise([judge_input(r) for r in rows], embedder, features)
    at = [k for k, name in enumerate(feature_names(embedder.dim, features)) if name.startswith("emb_")]
    return Labelled(x, [r["label"] for r in rows], [group_of(r) for r in rows], rows, slice(at[0], at[-1] + 1))


def _fit(kind: str, x: np.ndarray, y: list[str], params: dict, seed: int, weight: np.ndarray | None = None):
    """A fitted scikit-learn classifier (`predict_proba`, `classes_`) of this kind and settings."""
    if kind == "trees":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(**params, early_stopping=False, random_state=seed).fit(x, y, sample_weight=weight)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(**params, max_iter=3000, random_state=seed)).fit(
        x, y, logisticregression__sample_weight=weight)


def _full_proba(model, x: np.ndarray, classes: list[str]) -> np.ndarray:
    """Probabilities over every class, zero for a class missing from this fold's training part."""
    out = np.zeros((len(x), len(classes)))
    got = model.predict_proba(x)
    for k, c in enumerate(model.classes_):
        out[:, classes.index(c)] = got[:, k]
    return out


def out_of_fold(data: Labelled, kind: str, params: dict, seed: int, *, projection_size: int | None = None,
                later_weight: float = 1.0) -> np.ndarray:
    """Out-of-fold class probabilities (taxonomy order) of a GroupKFold by conversation (`labelled_rows.group_of`); with
    `projection_size`, each fold's projection is fitted on that fold's training part only."""
    from sklearn.model_selection import GroupKFold

    classes = list(taxonomy().labels)
    proba = np.zeros((len(data.labels), len(classes)))
    y = np.asarray(data.labels)
    weight = data.weights(later_weight)
    for train, test in GroupKFold(n_splits=FOLDS, shuffle=True, random_state=seed).split(data.x, y, data.groups):
        projection = fit_projection(data.x[train][:, data.embedding_columns], projection_size) if projection_size else None
        model = _fit(kind, data.projected(data.x[train], projection), list(y[train]), params, seed,
                     None if weight is None else weight[train])
        proba[test] = _full_proba(model, data.projected(data.x[test], projection), classes)
    return proba


def decide(proba: np.ndarray, threshold: float) -> list[str]:
    """Labels of out-of-fold probabilities (taxonomy order), each decided by the judge's own rule (`decide_label`)."""
    classes = list(taxonomy().labels)
    return [decide_label(p, classes, threshold) for p in proba]


def scores(labels: list[str], predicted: list[str]) -> dict:
    """κ (8-way), follow-up F1 / precision / recall, binary κ."""
    fu = taxonomy().followup_label
    ref, got = [x == fu for x in labels], [x == fu for x in predicted]
    tp = sum(a and b for a, b in zip(got, ref))
    return {"kappa": cohen_kappa(labels, predicted), "followup_f1": f1_binary(got, ref),
            "followup_precision": tp / sum(got) if sum(got) else float("nan"),
            "followup_recall": tp / sum(ref) if sum(ref) else float("nan"), "kappa_followup": cohen_kappa(ref, got)}


def positions_by_kind(rows: list[dict]) -> dict[str, list[int]]:
    """Row positions per scenario kind (a row's `kind`, probe when absent), kinds in name order."""
    kinds = [r.get("kind", "probe") for r in rows]
    return {kind: [i for i, k in enumerate(kinds) if k == kind] for kind in sorted(set(kinds))}


def scores_by_kind(rows: list[dict], labels: list[str], predicted: list[str], margins: list[float] | None = None) -> dict[str, dict]:
    """`scores` per scenario kind (a row's `kind`, probe when absent), with the turn and follow-up counts, the
    drift F1 (any of the taxonomy's drift labels against the rest) and each drift label's own F1 and count; with
    `margins`, also κ and follow-up F1 when the kind's least sure 10-50 % of turns take the reference label
    (`reviewed`: share → [κ, F1]), the curve `testbed review` on a run of that kind would follow."""
    from testbed.analysis.judge_quality.judge_eval import hand_labelling_curve

    drift = set(taxonomy().drift_labels)
    out = {}
    for kind, at in positions_by_kind(rows).items():
        y, p = [labels[k] for k in at], [predicted[k] for k in at]
        s = scores(y, p) | {"drift_f1": f1_binary([x in drift for x in p], [x in drift for x in y])}
        s |= {f"{label}_f1": f1_binary([x == label for x in p], [x == label for x in y]) for label in sorted(drift)}
        counts = {"turns": len(at), "followups": sum(x == taxonomy().followup_label for x in y)} | {
            f"{label}_turns": sum(x == label for x in y) for label in sorted(drift)}
        out[kind] = counts | {k: round(v, 3) for k, v in s.items()}
        if margins is not None:
            curve = hand_labelling_curve(p, y, [margins[k] for k in at])
            out[kind]["reviewed"] = {f"{r.share_by_hand:g}": [round(r.kappa, 3), round(r.followup_f1, 3)] for r in curve.itertuples()}
    return out


def best_threshold(labels: list[str], proba: np.ndarray) -> float:
    """The P(follow-up) threshold with the best follow-up F1 on out-of-fold predictions (ties: closest to 0.5)."""
    grid = np.round(np.arange(0.15, 0.86, 0.025), 3)
    fu = taxonomy().followup_label
    ref = [x == fu for x in labels]
    col = list(taxonomy().labels).index(fu)
    best = max(grid, key=lambda t: (round(f1_binary(list(proba[:, col] >= t), ref), 4), -abs(t - 0.5)))
    return float(best)


def calibration_error(p_followup: np.ndarray, truth: list[bool], bins: int = 10) -> float:
    """Expected calibration error of P(follow-up): the mean |observed rate − mean probability| over equal-width bins, weighted by size."""
    truth_ = np.asarray(truth, dtype=float)
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p_followup, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            total += mask.sum() * abs(truth_[mask].mean() - p_followup[mask].mean())
    return float(total / len(p_followup)) if len(p_followup) else float("nan")


def train(path: Path | Sequence[Path], version: str, embedder: StaticEmbedder, *, kind: str = "trees", seed: int = 0,
          features: str = TURN, projection_size: int | None = None, later_weight: float = 1.0, spent: Sequence[Path] = (),
          log=print) -> tuple[LinearModel | BoostedTrees, dict]:
    """Choose settings and threshold by grouped CV, refit on everything, and return the model and the CV report."""
    model, report, _ = train_with_error_rates(path, version, embedder, kind=kind, seed=seed, features=features,
                                              projection_size=projection_size, later_weight=later_weight, spent=spent, log=log)
    return model, report


ALL_KINDS = "all"
"""The key of the error counts over every labelled turn, beside one per scenario kind."""


def margins_of(proba: np.ndarray, threshold: float) -> list[float]:
    """Each turn's margin (`testbed.judges.learned.doubt`) from its class probabilities (taxonomy order)."""
    classes = list(taxonomy().labels)
    fu = classes.index(taxonomy().followup_label)
    return [margin(dict(zip(classes, map(float, p))), float(p[fu]), threshold) for p in proba]


def cv_error_rates(data: Labelled, predicted: list[str], margins: list[float], source: str) -> dict[str, JudgeErrorRates]:
    """Follow-up error counts with margins over every turn (`ALL_KINDS`) and per scenario kind (`<source> (<kind> turns)`)."""
    fu = taxonomy().followup_label
    by_kind = {ALL_KINDS: JudgeErrorRates.from_pairs([p == fu for p in predicted], [r == fu for r in data.labels], source, margins)}
    for kind, at in positions_by_kind(data.rows).items():
        by_kind[kind] = JudgeErrorRates.from_pairs([predicted[i] == fu for i in at], [data.labels[i] == fu for i in at],
                                                   f"{source} ({kind} turns)", [margins[i] for i in at])
    return by_kind


def train_with_error_rates(path: Path | Sequence[Path], version: str, embedder: StaticEmbedder, *, kind: str = "trees", seed: int = 0,
                           features: str = TURN, projection_size: int | None = None, later_weight: float = 1.0,
                           spent: Sequence[Path] = (), log=print) -> tuple[LinearModel | BoostedTrees, dict, dict[str, JudgeErrorRates]]:
    """`train`, and the cross-validated follow-up error counts with each turn's out-of-fold margin (the file
    `report --correct-with` reads, whose margins `JudgeErrorRates.within` bands): over every turn (key `ALL_KINDS`)
    and per scenario kind, since a judge's errors on dialogue turns are not its errors on probe turns. The
    model's report keeps the counts only. With `projection_size` the turn's embedding is projected
    (`testbed.judges.learned.projection`, fitted on every training turn for the final model and kept in its meta);
    `later_weight` weighs turns labelled in their conversation (`Labelled.weights`); `spent` files are read whole
    (`load_labelled`)."""
    if kind not in GRIDS:
        raise ValueError(f"unknown model kind {kind!r}; use one of {', '.join(GRIDS)}")
    data = load_labelled(path, embedder, features, spent=spent)
    trials, oof = [], {}
    for k, params in enumerate(GRIDS[kind]):
        oof[k] = out_of_fold(data, kind, params, seed, projection_size=projection_size, later_weight=later_weight)
        t = best_threshold(data.labels, oof[k])
        s = scores(data.labels, decide(oof[k], t))
        trials.append({"params": params, "threshold": t, **s})
        log(f"{kind} {json.dumps(params)} threshold={t:.3f}  κ={s['kappa']:.3f}  follow-up F1={s['followup_f1']:.3f}")
    chosen = max(range(len(trials)), key=lambda k: (trials[k]["kappa"] + trials[k]["followup_f1"]) / 2)
    best, proba = trials[chosen], oof[chosen]
    predicted = decide(proba, best["threshold"])
    classes = list(taxonomy().labels)
    per_label = compare(predicted, data.labels, classes).per_label
    fu = taxonomy().followup_label
    ece = calibration_error(proba[:, classes.index(fu)], [r == fu for r in data.labels])
    margins = margins_of(proba, best["threshold"])
    _log_hand_labelling(data.labels, predicted, margins, log)
    paths = _paths(path) + list(spent)
    names = "+".join(p.name for p in paths)
    by_kind = cv_error_rates(data, predicted, margins, f"cv:{names}")
    errors = by_kind[ALL_KINDS]
    report = {"features": features, "data": names, "data_sha256": hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()[:16], "turns": len(data.labels),
              "conversations": len(set(data.groups)), "seed": seed, "folds": FOLDS, "kind": kind, "chosen": best, "trials": trials,
              "cv_per_label": per_label.round(3).to_dict(orient="records"), "cv_by_kind": scores_by_kind(data.rows, data.labels, predicted, margins),
              "cv_error_counts": {k: v for k, v in asdict(errors).items() if k != "turns"}, "cv_calibration_error": round(ece, 4),
              **({"later_weight": later_weight} if later_weight != 1.0 else {})}
    projection = fit_projection(data.x[:, data.embedding_columns], projection_size) if projection_size else None
    if projection is not None:
        report[META_KEY] = projection.to_meta()
        projection = Projection.from_meta(report)
    x = data.projected(data.x, projection)
    fitted = _fit(kind, x, data.labels, best["params"], seed, data.weights(later_weight))
    if kind == "trees":
        return BoostedTrees.from_sklearn(fitted, classes, version, best["threshold"], embedder.fingerprint, report), report, by_kind
    return _linear(fitted, classes, version, best["threshold"], embedder.fingerprint, report, x.shape[1]), report, by_kind


def _log_hand_labelling(labels: list[str], predicted: list[str], margins: list[float], log) -> None:
    """Log the out-of-fold agreement when the least sure turns (by `replay --uncertain-first`'s margin) are labelled by hand."""
    from testbed.analysis.judge_quality.judge_eval import hand_labelling_curve

    curve = hand_labelling_curve(predicted, labels, margins)
    log("CV, least sure turns labelled by hand: " + "; ".join(
        f"{r.share_by_hand:.0%} → κ {r.kappa:.3f}, F1 {r.followup_f1:.3f}" for r in curve.itertuples()))


def _linear(pipeline, classes: list[str], version: str, threshold: float, embedding: str, report: dict, dim: int) -> LinearModel:
    scaler, model = pipeline[0], pipeline[-1]
    weights = np.zeros((dim, len(classes)), dtype=np.float32)
    bias = np.full(len(classes), -30.0, dtype=np.float32)
    for k, c in enumerate(model.classes_):
        weights[:, classes.index(c)] = model.coef_[k]
        bias[classes.index(c)] = model.intercept_[k]
    return LinearModel(version, classes, scaler.mean_.astype(np.float32), np.where(scaler.scale_ > 0, scaler.scale_, 1.0).astype(np.float32),
                       weights, bias, threshold, embedding, report)
