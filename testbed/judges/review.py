"""Reviewed labels: the fast judge decides the turns it is sure of, a reviewer the turns it doubts.

`plan_review` picks the least sure `share` of a run's turns by the fast judge's margin
(`testbed.judges.learned.doubt`), the same order the labelling app's `--uncertain-first` queue
uses. A reviewer — people (`human:NAME`, in the labelling app) or any judge (a model judge pays
only for those turns) — labels them. `compose_review` then writes one verdict per turn under an
identity that names both stages, `reviewed@<fast>/<share>%:<reviewer>`: the review's verdict where
there is one, else the fast judge's (a chosen turn the reviewer has not labelled yet keeps the fast
verdict and counts as pending). Each verdict's `raw` says which stage decided it, so the report
can say what share each stage decided, and the fast judge's margin band, so a correction can use
the fast judge's error rates within the band it decided (`JudgeErrorRates.within`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from testbed.judges.learned.doubt import stored_margin
from testbed.store import Store
from testbed.store.labels import REVIEWED, latest_labels, write_labels
from testbed.store.records import JudgeIdentity, LabelRecord, LabelRow

FAST, REVIEW, PENDING = "fast", "review", "pending"
"""The stage that decided a reviewed verdict: the fast judge, the reviewer, or the fast judge while the review is pending."""


class ReviewError(ValueError):
    """A review that cannot be planned: the message names what is missing and the command that supplies it."""


@dataclass(frozen=True)
class ReviewPlan:
    """Which turns of a run go to review: the fast judge's least sure `share`, least sure first."""

    run_id: str
    fast: JudgeIdentity
    share: float
    turns: int
    """Turns the fast judge labelled."""
    chosen: tuple[tuple[str, int], ...]
    """The turns sent to review, least sure first (an unscored fast verdict counts as least sure of all)."""
    cutoff: float
    """The smallest margin of a turn the fast judge decides (inf when every turn is reviewed)."""

    @property
    def identity_share(self) -> str:
        """The share as the reviewed identity's version shows it (`20%`)."""
        return f"{self.share * 100:g}%"


def reviewed_identity(plan: ReviewPlan, reviewer: JudgeIdentity) -> JudgeIdentity:
    """`reviewed@<fast>/<share>%:<reviewer>`: one identity per fast judge, share and reviewer."""
    return JudgeIdentity(REVIEWED, f"{plan.fast}/{plan.identity_share}", str(reviewer))


def plan_review(store: Store, run_id: str, fast: JudgeIdentity, share: float) -> ReviewPlan:
    """The least sure `share` (0 < share ≤ 1) of the turns `fast` labelled, by its stored margin.

    ReviewError when the fast judge labelled nothing on the run, when its labels hold no margin
    (only the learned judge stores the probabilities a margin is read from), or when it is itself
    a reviewed or a model identity (its name would not fit the reviewed identity's version).
    """
    if not 0.0 < share <= 1.0:
        raise ReviewError(f"--share {share:g} must be above 0 and at most 1 (e.g. 0.2 reviews the least sure fifth)")
    if fast.judge == REVIEWED or fast.model:
        raise ReviewError(f"the fast stage must be a fast judge without a model (learned), not {fast}")
    margins: dict[tuple[str, int], float] = {}
    for row in latest_labels(store, run_id, fast):
        key = (row.episode_id, row.turn_index)
        margin = stored_margin(row.raw) if row.status == "scored" else -math.inf
        if margin is None:
            raise ReviewError(f"{fast} stores no margin on its verdicts, so its doubt cannot be ranked: "
                              f"label the run with the learned judge (`testbed judge {run_id} --judge learned`) and review that")
        margins[key] = margin
    if not margins:
        raise ReviewError(f"no labels from {fast} on run {run_id}: run `testbed judge {run_id} --judge {fast.judge}` first")
    ranked = sorted(margins, key=lambda k: (margins[k], k))
    k = min(len(ranked), math.ceil(share * len(ranked) - 1e-9))
    cutoff = margins[ranked[k]] if k < len(ranked) else math.inf
    return ReviewPlan(run_id, fast, share, len(ranked), tuple(ranked[:k]), cutoff)


@dataclass(frozen=True)
class ComposedReview:
    """What `compose_review` wrote: the identity and how many verdicts each stage decided."""

    identity: JudgeIdentity
    decided: dict[str, int]
    """Verdicts per stage (`fast`, `review`, `pending`)."""


def compose_review(store: Store, plan: ReviewPlan, reviewer: JudgeIdentity) -> ComposedReview:
    """Write the reviewed verdict of every turn the fast judge labelled (appended; the newest verdict per turn counts)."""
    fast = {(r.episode_id, r.turn_index): r for r in latest_labels(store, plan.run_id, plan.fast)}
    reviewed = {(r.episode_id, r.turn_index): r for r in latest_labels(store, plan.run_id, reviewer) if r.status == "scored"}
    chosen = set(plan.chosen)
    rows, decided = [], {FAST: 0, REVIEW: 0, PENDING: 0}
    for key, verdict in fast.items():
        stage = FAST if key not in chosen else REVIEW if key in reviewed else PENDING
        decided[stage] += 1
        rows.append(_row(key, reviewed[key] if stage == REVIEW else verdict, stage, verdict, plan))
    identity = reviewed_identity(plan, reviewer)
    write_labels(store, plan.run_id, identity, rows)
    return ComposedReview(identity, decided)


def _row(key: tuple[str, int], decider: LabelRecord, stage: str, fast: LabelRecord, plan: ReviewPlan) -> LabelRow:
    margin = stored_margin(fast.raw) if fast.status == "scored" else None
    raw = json.dumps({"stage": stage, "margin": margin, "cutoff": None if math.isinf(plan.cutoff) else plan.cutoff,
                      "fast": {"label": fast.label, "followup": fast.followup, "status": fast.status},
                      "decided_by": str(decider.who)})
    return LabelRow(key[0], key[1], decider.status, decider.label, decider.followup, f"[{stage}] {decider.reason or ''}".strip(),
                    raw, 1)


def stage_of(raw: str | None) -> str | None:
    """The stage that decided a stored reviewed verdict (`fast`, `review`, `pending`), None for any other verdict."""
    try:
        stage = json.loads(raw).get("stage") if raw else None
    except (ValueError, AttributeError):
        return None
    return stage if stage in (FAST, REVIEW, PENDING) else None


def decided(store: Store, run_id: str, identity: JudgeIdentity) -> dict[str, int]:
    """How many of a reviewed identity's current verdicts each stage decided (`fast`, `review`, `pending`)."""
    counts = {FAST: 0, REVIEW: 0, PENDING: 0}
    for row in latest_labels(store, run_id, identity):
        stage = stage_of(row.raw)
        if stage is not None:
            counts[stage] += 1
    return counts


def decided_line(store: Store, run_id: str, identity: JudgeIdentity) -> str:
    """The report's line on a reviewed identity: what share of its verdicts each stage decided."""
    counts = decided(store, run_id, identity)
    n = sum(counts.values()) or 1
    fast, _, _ = identity.version.rpartition("/")
    line = (f"{identity}: {counts[REVIEW] / n:.0%} by the review ({identity.model}), "
            f"{counts[FAST] / n:.0%} by the fast judge ({fast})")
    if counts[PENDING]:
        line += f", {counts[PENDING] / n:.0%} chosen for review but not reviewed yet (fast verdict kept)"
    return line + f" of {sum(counts.values())} turns"


def stages(identity: JudgeIdentity) -> tuple[JudgeIdentity, ...]:
    """The judges behind a labeller: a reviewed identity's fast judge and reviewer, any other identity itself."""
    if identity.judge != REVIEWED:
        return (identity,)
    fast, _, _ = identity.version.rpartition("/")
    return JudgeIdentity.parse(fast), JudgeIdentity.parse(identity.model)
