"""A fault detector's measured error on turns whose faults are known: precision, recall and F1 at the turn level.

The fault-injection lab (benchmarks/fault_lab.py) plants one fault or near miss per episode at a known user turn;
any detector that flags user turns (the rules, a judge's drift labels, a reviewer that tags whole conversations) is
scored the same way against it. A *target* is what is counted: a rule kind (the planted faults that rule should
flag are the positives, its flags the predictions) or a τ² tag (the planted faults counted under the tag, and every
flag whose kind counts under it: testbed.scenarios.tau2.fault_tags.RULE_TAGS).

A flag of the target on a positive turn is a true positive; a flag of it on any other turn (clean, a near miss, a
fault of another kind) a false positive; a positive turn without one a false negative. Precision and recall carry
Wilson 95 % intervals; F1 an interval from a bootstrap over episodes (turns of one episode are not independent).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from testbed.analysis.stats import wilson_interval

TURN_COLUMNS = ["episode_id", "domain", "turn_index", "planted"]
"""The lab's user turns: the episode, its domain, the turn's message index, and the kind planted on it ("" for none)."""
FLAG_COLUMNS = ["episode_id", "turn_index", "kind"]
"""A detector's flags: the episode, the flagged user turn's message index, and the kind (a rule kind or a τ² tag)."""
BOOTSTRAP_RESAMPLES = 1000


def episode_counts(turns: pd.DataFrame, flags: pd.DataFrame, positive: Callable[[str], bool],
                   counts: Callable[[str], bool]) -> pd.DataFrame:
    """Per episode: true positives, false positives and false negatives of one target. `positive(planted)` says whether
    a turn planted with that kind is a positive; `counts(kind)` whether a flag of that kind is the target's."""
    own = flags[flags.kind.map(counts)] if len(flags) else flags
    flagged = set(zip(own.episode_id, own.turn_index.astype(int)))
    frame = turns.assign(positive=turns.planted.map(positive),
                         flagged=[(e, int(t)) in flagged for e, t in zip(turns.episode_id, turns.turn_index)])
    frame = frame.assign(tp=frame.positive & frame.flagged, fp=~frame.positive & frame.flagged,
                         fn=frame.positive & ~frame.flagged)
    return frame.groupby("episode_id")[["tp", "fp", "fn"]].sum().astype(int)


def f1(tp: float, fp: float, fn: float) -> float:
    """The F1 score (NaN when there is neither a positive nor a flag)."""
    return 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else float("nan")


def bootstrap_f1(per_episode: pd.DataFrame, seed: int, resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """A 95 % percentile interval of F1 over episodes resampled with replacement."""
    if per_episode.empty:
        return float("nan"), float("nan")
    values = per_episode[["tp", "fp", "fn"]].to_numpy()
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    sums = values[picks].sum(axis=1)
    denominators = 2 * sums[:, 0] + sums[:, 1] + sums[:, 2]
    scores = np.divide(2 * sums[:, 0], denominators, out=np.full(resamples, np.nan), where=denominators > 0)
    scores = scores[~np.isnan(scores)]
    if not len(scores):
        return float("nan"), float("nan")
    return float(np.quantile(scores, 0.025)), float(np.quantile(scores, 0.975))


def scores(per_episode: pd.DataFrame, seed: int) -> dict[str, float]:
    """Precision, recall and F1 of one target with their intervals, from its per-episode counts."""
    tp, fp, fn = (int(per_episode[c].sum()) for c in ("tp", "fp", "fn"))
    p_low, p_high = wilson_interval(tp, tp + fp) if tp + fp else (float("nan"), float("nan"))
    r_low, r_high = wilson_interval(tp, tp + fn) if tp + fn else (float("nan"), float("nan"))
    f_low, f_high = bootstrap_f1(per_episode, seed)
    return {"tp": tp, "fp": fp, "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else float("nan"), "precision_low": p_low, "precision_high": p_high,
            "recall": tp / (tp + fn) if tp + fn else float("nan"), "recall_low": r_low, "recall_high": r_high,
            "f1": f1(tp, fp, fn), "f1_low": f_low, "f1_high": f_high}


def target_table(turns: pd.DataFrame, flags: pd.DataFrame, targets: dict[str, tuple[Callable[[str], bool],
                 Callable[[str], bool]]], seed: int, by_domain: bool = True) -> pd.DataFrame:
    """One row per target (and per domain, then over all domains as `all`): its counts and scores. `targets` maps each
    target's name to (positive, counts) as `episode_counts` takes them."""
    rows = []
    groups = [("all", turns)] + (sorted(turns.groupby("domain")) if by_domain else [])
    for name, (positive, counts) in targets.items():
        for domain, part in groups:
            per_episode = episode_counts(part, flags[flags.episode_id.isin(set(part.episode_id))], positive, counts)
            rows.append({"target": name, "domain": domain, "episodes": len(per_episode), **scores(per_episode, seed)})
    return pd.DataFrame(rows)


def cross_table(turns: pd.DataFrame, flags: pd.DataFrame, kinds: list[str]) -> pd.DataFrame:
    """Planted kind × flag kind: on how many turns planted with each kind (and `clean` turns, planted with none) a flag
    of each kind fell, beside how many such turns there were (`turns`)."""
    flagged = flags.drop_duplicates(["episode_id", "turn_index", "kind"])
    joined = turns.merge(flagged, on=["episode_id", "turn_index"], how="left")
    joined = joined.assign(planted=joined.planted.replace("", "clean"))
    counts = pd.crosstab(joined.planted, joined.kind).reindex(columns=kinds, fill_value=0)
    sizes = turns.assign(planted=turns.planted.replace("", "clean")).groupby("planted").size().rename("turns")
    return pd.concat([sizes, counts], axis=1).fillna(0).astype(int)


def clean_rates(turns: pd.DataFrame, flags: pd.DataFrame, clean_episodes: set[str]) -> dict[str, float]:
    """On episodes where nothing was planted: how many, the share with any flag, and flags per user turn."""
    own = turns[turns.episode_id.isin(clean_episodes)]
    found = flags[flags.episode_id.isin(clean_episodes)].drop_duplicates(["episode_id", "turn_index", "kind"])
    n = len(clean_episodes)
    flagged = found.episode_id.nunique()
    low, high = wilson_interval(flagged, n) if n else (float("nan"), float("nan"))
    return {"episodes": n, "turns": len(own), "flagged_episodes": int(flagged),
            "flagged_share": flagged / n if n else float("nan"), "flagged_share_low": low, "flagged_share_high": high,
            "flags": len(found), "flags_per_turn": len(found) / len(own) if len(own) else float("nan")}
