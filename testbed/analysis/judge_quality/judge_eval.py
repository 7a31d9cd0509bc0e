"""Score a judge against a labelled file in the gold format (`question`, `assistant`, `user_turn`, `label`).

Part of analysis, not of the judges: it measures a judge from outside, through the judge interface,
with the agreement statistics of `testbed.analysis.judge_quality.agreement`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from testbed.analysis.judge_quality.agreement import Agreement, cohen_kappa, compare, f1_binary
from testbed.judges.base import make_judge
from testbed.judges.specs import ResolvedJudge
from testbed.judges.taxonomy import taxonomy
from testbed.analysis.judge_quality.labelled_rows import attached, judge_input
from testbed.judges.verdict import JudgeInput, Verdict
from testbed.specs.errors import SpecError, cut
from testbed.specs.files import MAX_LABEL_BYTES, read_text

REQUIRED = ("question", "assistant", "user_turn", "label")


@dataclass(frozen=True)
class JudgeEvaluation:
    """A judge against reference labels: 8-way agreement (if it gives labels) and binary follow-up F1."""

    n: int
    unscored: int
    kappa: float
    f1_followup: float
    binary_kappa: float
    labels: Agreement | None

    def summary_line(self) -> str:
        """The one line scripts read: `kappa=<κ> f1_followup=<F1> n=<items>`."""
        return f"kappa={self.kappa:.4f} f1_followup={self.f1_followup:.4f} n={self.n}"


def read_gold(path: Path) -> list[tuple[JudgeInput, str]]:
    """Items and reference labels; a bad line is reported with its number and what is missing.

    A line may carry the conversation before its turn (`context`: a list of `{"role", "content"}`); it is capped
    as a judged turn's is. Lines committed with detached text (`source`) are rebuilt from the installed package.
    """
    t = taxonomy()
    rows = []
    for number, line in enumerate(read_text(path, what="gold file", max_bytes=MAX_LABEL_BYTES).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpecError(f"{path}:{number}", "(line)", f"not JSON ({exc.msg})", "one JSON object per line") from None
        except RecursionError:
            raise SpecError(f"{path}:{number}", "(line)", "JSON nested too deeply", "one flat JSON object per line") from None
        if not isinstance(row, dict):
            raise SpecError(f"{path}:{number}", "(line)", "not a JSON object", "one JSON object per line")
        rows.append((number, row))
    out = []
    try:
        rebuilt = attached([r for _, r in rows])
    except (ValueError, LookupError) as exc:
        raise SpecError(path, "source", f"a detached row cannot be rebuilt: {exc}",
                        "install the pinned dataset package, or restore the file from git") from None
    for number, row in zip([n for n, _ in rows], rebuilt):
        missing = [k for k in REQUIRED if not isinstance(row.get(k), str)]
        if missing:
            raise SpecError(f"{path}:{number}", missing[0], "missing or not a string", f"give every line {', '.join(REQUIRED)}")
        if row["label"] not in t.definitions:
            raise SpecError(f"{path}:{number}", "label", f"unknown label {cut(row['label'])}",
                            f"use one of {', '.join(t.labels)}")
        context = row.get("context") or []
        if not isinstance(context, list) or not all(isinstance(c, dict) and isinstance(c.get("content", ""), str) for c in context):
            raise SpecError(f"{path}:{number}", "context", "not a list of {role, content} objects",
                            "give the conversation before the turn as [{\"role\": ..., \"content\": ...}, ...], or leave it out")
        out.append((judge_input({**row, "id": str(row.get("id", number))}), row["label"]))
    if not out:
        raise SpecError(str(path), "(file)", "no items", "give at least one labelled line")
    return out


async def run_judge(judge: ResolvedJudge, items: list[JudgeInput], backend=None) -> list[Verdict]:
    """Verdicts for in-memory items, in order, from the judge the spec describes (through `backend` if given)."""
    return [verdict for verdict, _ in await make_judge(judge, backend).judge_all(items)]


def evaluate(verdicts: list[Verdict], references: list[str]) -> JudgeEvaluation:
    """Compare verdicts with reference labels; unscored verdicts are excluded and counted."""
    t = taxonomy()
    pairs = [(v, r) for v, r in zip(verdicts, references) if v.scored]
    predicted_fu = [bool(v.followup) for v, _ in pairs]
    reference_fu = [t.is_followup(r) for _, r in pairs]
    binary_kappa = cohen_kappa([str(x) for x in predicted_fu], [str(x) for x in reference_fu])
    labelled = [(v.label, r) for v, r in pairs if v.label is not None]
    agreement = compare([a for a, _ in labelled], [b for _, b in labelled], t.labels) if len(labelled) == len(pairs) and pairs else None
    kappa = agreement.kappa if agreement else binary_kappa
    return JudgeEvaluation(len(pairs), len(verdicts) - len(pairs), kappa if pairs else math.nan,
                           f1_binary(predicted_fu, reference_fu), binary_kappa, agreement)


CONDITION_FIELDS = ("source_model", "mode", "temperature", "perturbation")
"""The fields of a labelled line that say how its turn was made (the gold set's), for the per-condition table."""


def gold_conditions(path: Path) -> list[dict]:
    """Each labelled line's condition fields (missing ones as `-`), in file order, beside `read_gold`'s items."""
    rows = [json.loads(line) for line in read_text(path, what="gold file", max_bytes=MAX_LABEL_BYTES).splitlines() if line.strip()]
    return [{k: row.get(k, "-") for k in CONDITION_FIELDS} for row in rows]


def per_condition_rates(verdicts: list[Verdict], references: list[str], conditions: list[dict]) -> pd.DataFrame:
    """Per condition (model × mode × T × perturbation): turns, the reference follow-up rate and the judge's, over scored turns."""
    t = taxonomy()
    rows = [{**c, "reference": t.is_followup(r), "judge": bool(v.followup)} for v, r, c in zip(verdicts, references, conditions) if v.scored]
    frame = pd.DataFrame(rows, columns=[*CONDITION_FIELDS, "reference", "judge"])
    out = frame.groupby(list(CONDITION_FIELDS), dropna=False).agg(turns=("judge", "size"), reference_rate=("reference", "mean"),
                                                                   judge_rate=("judge", "mean")).reset_index()
    out["difference"] = out.judge_rate - out.reference_rate
    return out


def with_corrected_conditions(table: pd.DataFrame, rates) -> pd.DataFrame:
    """`per_condition_rates` with each condition's judge rate corrected for the judge's errors measured elsewhere
    (`rates`, e.g. the trainer's cross-validated counts), its 95% interval, and whether that interval covers the
    reference rate: the check that corrected intervals are honest on labelled turns they were not measured on."""
    from testbed.analysis.judge_quality.correction import corrected_rate

    out = table.copy()
    fixed = [corrected_rate(round(r.judge_rate * r.turns), int(r.turns), rates) for r in table.itertuples()]
    out["corrected"] = [c.corrected for c in fixed]
    out["corrected_lo"] = [c.lo for c in fixed]
    out["corrected_hi"] = [c.hi for c in fixed]
    out["covers"] = (out.corrected_lo <= out.reference_rate) & (out.reference_rate <= out.corrected_hi)
    return out


def reviewed_conditions(verdicts: list[Verdict], references: list[str], conditions: list[dict], share: float,
                        rates) -> pd.DataFrame:
    """Per condition, the follow-up rate of reviewed labels when the least sure `share` of the scored turns take the
    reference label (the reviewer taken as right), corrected as `report --judge reviewed --correct-with` does: the fast
    judge's part with `rates` within the margin band it decided, the reviewed part as it is; and whether the
    interval covers the reference rate. Needs a margin on every verdict (the learned judge)."""
    from testbed.analysis.judge_quality.correction import reviewed_rate
    from testbed.judges.learned.doubt import stored_margin

    t = taxonomy()
    scored = [(v, r, c, stored_margin(v.raw)) for v, r, c in zip(verdicts, references, conditions) if v.scored]
    order = sorted(range(len(scored)), key=lambda i: scored[i][3])
    k = round(share * len(scored))
    chosen = set(order[:k])
    cutoff = scored[order[k]][3] if k < len(scored) else math.inf
    band = rates.within(cutoff) if math.isfinite(cutoff) else rates
    rows = [{**c, "reviewed": i in chosen, "reference": t.is_followup(r), "verdict": t.is_followup(r) if i in chosen else bool(v.followup)}
            for i, (v, r, c, _) in enumerate(scored)]
    frame = pd.DataFrame(rows)
    out = []
    for key, group in frame.groupby(list(CONDITION_FIELDS), dropna=False):
        fast, review = group[~group.reviewed], group[group.reviewed]
        rate = reviewed_rate((int(fast.verdict.sum()), len(fast), band), (int(review.verdict.sum()), len(review), None))
        out.append({**dict(zip(CONDITION_FIELDS, key)), "turns": len(group), "reviewed_share": len(review) / len(group),
                    "reference_rate": group.reference.mean(), "reviewed_rate": group.verdict.mean(), "corrected": rate.corrected,
                    "corrected_lo": rate.lo, "corrected_hi": rate.hi})
    table = pd.DataFrame(out)
    table["covers"] = (table.corrected_lo <= table.reference_rate) & (table.reference_rate <= table.corrected_hi)
    return table


def error_rates(verdicts: list[Verdict], references: list[str], source: str):
    """The judge's follow-up sensitivity and specificity counts on these references (testbed.analysis.judge_quality.correction),
    with each turn's margin when every scored verdict holds one (the learned judge), for `JudgeErrorRates.within`."""
    from testbed.analysis.judge_quality.correction import JudgeErrorRates
    from testbed.judges.learned.doubt import stored_margin

    t = taxonomy()
    scored = [(v, r) for v, r in zip(verdicts, references) if v.scored]
    margins = [stored_margin(v.raw) for v, _ in scored]
    return JudgeErrorRates.from_pairs([bool(v.followup) for v, _ in scored], [t.is_followup(r) for _, r in scored], source,
                                      margins if scored and all(m is not None for m in margins) else None)


HAND_SHARES = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5)
"""Shares of the turns, least sure first, that `hand_labelling_curve` gives to people."""


def least_sure_order(margins: list[float | None]) -> list[int]:
    """Turn positions, least sure first (smallest margin; ties by position); a turn without a margin is never listed."""
    return [i for _, i in sorted((m, i) for i, m in enumerate(margins) if m is not None)]


def hand_labelling_curve(predicted: list[str], references: list[str], margins: list[float | None],
                         shares: tuple[float, ...] = HAND_SHARES) -> pd.DataFrame:
    """Agreement with the references when the least sure share of turns is labelled by hand (taking the reference label).

    Turns are taken in order of margin (smallest first; a turn without one is never taken), so
    the curve says how many hand labels buy how much agreement when `replay --uncertain-first`
    orders the queue. A person is taken to agree with the reference, so it is a ceiling.
    """
    return reviewer_curve(predicted, references, margins, dict(enumerate(references)), shares).drop(columns="unscored_reviews")


def reviewer_curve(predicted: list[str], references: list[str], margins: list[float | None], reviewed: dict[int, str | None],
                   shares: tuple[float, ...] = HAND_SHARES) -> pd.DataFrame:
    """Agreement with the references when the least sure share of turns takes a reviewer's label.

    `reviewed` maps a turn's position to the reviewer's label, None where its verdict was unscored: that
    turn keeps the fast label and is counted in `unscored_reviews`. A share reaching past the reviewed
    turns is left out, so the curve never credits a review that was not made.
    """
    fu = taxonomy().is_followup
    order = least_sure_order(margins)
    rows = []
    for share in shares:
        k = min(round(share * len(predicted)), len(order))
        taken = order[:k]
        if any(i not in reviewed for i in taken):
            continue
        labels = list(predicted)
        for i in taken:
            labels[i] = reviewed[i] if reviewed[i] is not None else labels[i]
        rows.append({"share_by_hand": share, "turns_by_hand": k, "unscored_reviews": sum(reviewed[i] is None for i in taken),
                     "kappa": cohen_kappa(labels, references),
                     "followup_f1": f1_binary([fu(x) for x in labels], [fu(x) for x in references])})
    return pd.DataFrame(rows, columns=["share_by_hand", "turns_by_hand", "unscored_reviews", "kappa", "followup_f1"])
