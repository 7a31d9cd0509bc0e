"""The whole-conversation reviewer's figures in the τ² report, and how far the rules agree with it.

Two detectors look for the same simulated-user errors: the rules (testbed.scenarios.tau2.user_faults, stored under
`tau2-user-rules@N`) and a whole-conversation reviewer (`testbed review-faults RUN --whole`, stored per user turn
under `user-review@<prompt version>:<model>`, testbed.store.turn_reviews). Each figure says which produced it.

Per condition, of the finished episodes the reviewer scored: the share with an error it tagged, with a
`critical_hindered` error and with a `critical_helped` one (Wilson 95 % intervals); episodes whose review could not be
read are counted apart (`review_unscored`), never as clean. Where the rules checked the same episodes, every user turn
of them is one item rated twice, per τ² tag the rules can flag (a rule's fault kind counts under `RULE_TAGS`' tag;
`guideline_violation` only when a judge's role drift is read): both flagged it, the rules only, the reviewer only,
neither; Cohen's κ (scikit-learn's; undefined, NaN, when neither detector varies) and the share of turns they agree on.
`agree_any_*` pools those tags: any rule fault on the turn against any of those tags from the reviewer.
"""

from __future__ import annotations

import warnings

import pandas as pd

from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.stored_faults import RULES
from testbed.scenarios.tau2.fault_tags import RULE_TAGS, USER_ERROR_TAGS
from testbed.store.records import JudgeIdentity
from testbed.store.run_frames import RunFrames
from testbed.store.turn_reviews import turn_reviews_df

RULE_CHECKED_TAGS = tuple(t for t in USER_ERROR_TAGS if t in RULE_TAGS.values())
"""The τ² tags some rule flags, in τ²'s order: the ones rules and reviewer can agree on."""
DRIFT_TAG = RULE_TAGS["role_drift"]
"""The tag role drift counts under: the rules flag it only through a judge's drift labels."""
CELLS = ("both", "rules_only", "reviewer_only", "neither", "kappa", "agreement", "turns")
"""What each tag's agreement gives, as `agree_<tag>_<cell>`."""
REVIEW_RATES = ("review_error", "review_hindered", "review_helped")
"""The reviewer's shares, each with `_lo` and `_hi`."""
USER_REVIEW_COLUMNS = [*(f"{r}{s}" for r in REVIEW_RATES for s in ("", "_lo", "_hi")), "review_episodes", "review_unscored",
                       "review_source", *(f"agree_{t}_{c}" for t in (*RULE_CHECKED_TAGS, "any") for c in CELLS)]
"""What `user_review_cells` gives a report row, in order."""


def reviewed_turns(run: RunFrames) -> tuple[JudgeIdentity, pd.DataFrame] | None:
    """The whole-conversation reviewer that wrote last on the run and its latest review of every user turn
    (testbed.store.turn_reviews.TURN_REVIEW_COLUMNS); None when no reviewer reviewed the run. Read once per run."""
    def read():
        reviewers = run.store.turn_reviewers(run.run_id)
        return (reviewers[-1], turn_reviews_df(run.store, run.run_id, reviewers[-1])) if reviewers else None

    return run.derived("tau2 user review", read)


def episode_verdicts(turns: pd.DataFrame) -> pd.DataFrame:
    """One row per reviewed episode (indexed by id): `scored` (every turn's review read), `error` (a turn tagged),
    `hindered`, `helped` (a turn of that severity)."""
    by = turns.groupby("episode_id")
    return pd.DataFrame({"scored": by.status.agg(lambda s: bool((s == "scored").all())),
                         "error": by.severity.agg(lambda s: bool(s.notna().any())),
                         "hindered": by.severity.agg(lambda s: bool((s == "critical_hindered").any())),
                         "helped": by.severity.agg(lambda s: bool((s == "critical_helped").any()))})


def user_review_cells(faults: pd.DataFrame, turn_faults: pd.DataFrame, review: tuple[JudgeIdentity, pd.DataFrame] | None,
                      judged: bool) -> dict:
    """A condition group's reviewer and agreement columns (`USER_REVIEW_COLUMNS`) from its `fault_frame` rows (indexed
    by episode id), the run's rule faults turn by turn (`turn_faults`) and its `reviewed_turns`; none without a reviewer."""
    if review is None:
        return {}
    reviewer, turns = review
    finished = faults.index[faults.status == "done"]
    mine = turns[turns.episode_id.isin(finished)]
    verdicts = episode_verdicts(mine) if len(mine) else pd.DataFrame(columns=["scored", "error", "hindered", "helped"])
    scored = verdicts[verdicts.scored.astype(bool)]
    out: dict = {}
    for name, column in zip(REVIEW_RATES, ("error", "hindered", "helped")):
        hits, n = int(scored[column].astype(bool).sum()), len(scored)
        lo, hi = wilson_interval(hits, n)
        out.update({name: hits / n if n else float("nan"), f"{name}_lo": lo, f"{name}_hi": hi})
    out.update({"review_episodes": len(scored), "review_unscored": len(verdicts) - len(scored), "review_source": str(reviewer)})
    checked = set(faults.index[(faults.status == "done") & faults.checked]) & set(scored.index)
    out.update(agreement(mine[mine.episode_id.isin(checked)], turn_faults[turn_faults.episode_id.isin(checked)], judged))
    return out


def agreement(turns: pd.DataFrame, rule_faults: pd.DataFrame, judged: bool) -> dict:
    """Rules against reviewer on the user turns of `turns` (the reviewer's rows of episodes both checked), per tag the
    rules flag and pooled (`any`): the four cells, κ, the share agreed and the turns compared (module docstring)."""
    tags = [t for t in RULE_CHECKED_TAGS if judged or t != DRIFT_TAG]
    keys = list(zip(turns.episode_id, turns.turn_index.astype(int)))
    ruled: dict[tuple[str, int], set[str]] = {}
    for eid, turn, kind in zip(rule_faults.episode_id, rule_faults.turn_index.astype(int), rule_faults.kind):
        ruled.setdefault((eid, turn), set()).add(RULE_TAGS.get(kind, "other"))
    given = dict(zip(keys, (set(t) for t in turns.tags)))
    out: dict = {}
    for tag in (*RULE_CHECKED_TAGS, "any"):
        if tag != "any" and tag not in tags:
            out.update({f"agree_{tag}_{c}": float("nan") for c in CELLS})
            continue
        wanted = set(tags) if tag == "any" else {tag}
        rules = [bool(ruled.get(k, set()) & wanted) for k in keys]
        reviewer = [bool(given[k] & wanted) for k in keys]
        out.update({f"agree_{tag}_{c}": v for c, v in _cells(rules, reviewer).items()})
    return out


def _cells(rules: list[bool], reviewer: list[bool]) -> dict:
    pairs = list(zip(rules, reviewer))
    n = len(pairs)
    counts = {"both": pairs.count((True, True)), "rules_only": pairs.count((True, False)),
              "reviewer_only": pairs.count((False, True)), "neither": pairs.count((False, False))}
    return {**counts, "kappa": kappa(rules, reviewer),
            "agreement": (counts["both"] + counts["neither"]) / n if n else float("nan"), "turns": n}


def kappa(rules: list[bool], reviewer: list[bool]) -> float:
    """Cohen's κ of two yes/no raters (scikit-learn's); NaN with no items or when neither rater varies (κ undefined)."""
    if not rules or (len(set(rules)) == 1 and set(rules) == set(reviewer)):
        return float("nan")
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(cohen_kappa_score(rules, reviewer, labels=[False, True]))


def rules_source(judge: JudgeIdentity | None) -> str:
    """The identity the rules' figures are labelled with (and the judge's, whose drift labels they read)."""
    return str(RULES) + (f" + drift by {judge}" if judge is not None else "")
