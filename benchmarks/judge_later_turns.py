"""How well do the judges read later user turns? Each judge on held-out later turns, alone and with its least sure share
reviewed, by kind of conversation.

Issue 40's bar, on held-out later turns: κ ≥ 0.70 and follow-up F1 ≥ 0.60 for the fast judge alone, and ≥ 0.85 / 0.85
with the least sure 25 % taking the reference label (a person taken to be right: a ceiling). The sets are the labelled
files named (by default `labels-conversation-heldout-4.jsonl`, 248 turns of conversations generated after the third part
was spent and scored once with the default of `03ef26d`; `labels-conversation-heldout-3.jsonl`, 254 turns, scored once
at `9ee3c98`; and issue 26's 132 `labels-heldout.jsonl`, never trained on but looked at); the judges are judge specs (by
default `learned`, the default, and `local`) and learned model files (by default learned-6, learned-4 and learned-3, for
comparison). Prints one JSON object per set and judge. The first two held-out parts, `labels-conversation-heldout.jsonl`
and `-heldout-2.jsonl`, were each scored once and are now training data (learned-6's).

    .venv/bin/python benchmarks/judge_later_turns.py
    .venv/bin/python benchmarks/judge_later_turns.py --sets judges/training/labels-conversation-heldout-4.jsonl --models judges/models/learned-3.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import numpy as np

from testbed.analysis.judge_quality.judge_eval import hand_labelling_curve, read_gold
from testbed.analysis.judge_quality.judge_training import scores
from testbed.analysis.judge_quality.labelled_rows import group_of, read_rows
from testbed.judges.base import make_judge
from testbed.judges.learned.doubt import stored_margin
from testbed.judges.learned.judge import LearnedJudge
from testbed.judges.specs import load_judge

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "judges" / "training"
SETS = [TRAINING / f"{name}.jsonl" for name in ("labels-conversation-heldout-4", "labels-conversation-heldout-3", "labels-heldout")]
MODELS = [REPO / "judges" / "models" / f"{name}.json" for name in ("learned-6", "learned-4", "learned-3")]
REVIEW_SHARE = 0.25
RESAMPLES = 1000


def intervals(labels: list[str], predicted: list[str], groups: list[str], seed: int = 0) -> dict:
    """95 % percentile intervals of κ and follow-up F1 from `RESAMPLES` bootstrap resamples of whole conversations
    (a conversation's turns are not independent, so they are drawn together)."""
    rng = np.random.default_rng(seed)
    by_group: dict[str, list[int]] = {}
    for k, g in enumerate(groups):
        by_group.setdefault(g, []).append(k)
    members = list(by_group.values())
    kappas, f1s = [], []
    for _ in range(RESAMPLES):
        at = [k for j in rng.integers(len(members), size=len(members)) for k in members[j]]
        s = scores([labels[k] for k in at], [predicted[k] for k in at])
        kappas.append(s["kappa"])
        f1s.append(s["followup_f1"])
    return {f"{name}_95": [round(float(np.nanpercentile(v, 2.5)), 3), round(float(np.nanpercentile(v, 97.5)), 3)]
            for name, v in (("kappa", kappas), ("followup_f1", f1s))}


def figures(labels: list[str], predicted: list[str], margins: list[float | None], groups: list[str] | None = None) -> dict:
    """κ, follow-up F1 / precision / recall, and κ / F1 with the least sure `REVIEW_SHARE` taking the reference; with
    `groups` (each turn's conversation), bootstrap intervals of κ and F1 (`intervals`)."""
    s = scores(labels, predicted)
    out = {"turns": len(labels), "followups": sum(x == "genuine_followup" for x in labels),
           **{k: round(v, 3) for k, v in s.items()}, **(intervals(labels, predicted, groups) if groups else {})}
    if any(m is not None for m in margins):
        curve = hand_labelling_curve(predicted, labels, margins, shares=(REVIEW_SHARE,))
        out["reviewed_25"] = [round(float(curve.kappa.iloc[0]), 3), round(float(curve.followup_f1.iloc[0]), 3)]
    return out


async def verdicts(judge, items) -> list:
    """The judge's verdicts on the items, in order."""
    return [v for v, _ in await judge.judge_all(items)]


def main() -> None:
    """Score every judge on every set, overall and per kind of conversation."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--sets", type=Path, nargs="+", default=SETS)
    parser.add_argument("--judges", nargs="+", default=["learned", "local"], help="judge specs (built-in names or files)")
    parser.add_argument("--models", type=Path, nargs="*", default=MODELS, help="learned model files, judged as `learned`")
    args = parser.parse_args()
    judges = [make_judge(load_judge(name)) for name in args.judges] + [LearnedJudge("learned", path) for path in args.models]
    for path in args.sets:
        rows = read_rows([path])
        items = [item for item, _ in read_gold(path)]
        labels = [r["label"] for r in rows]
        kinds = [r.get("kind", "dialogue") for r in rows]
        for judge in judges:
            got = asyncio.run(verdicts(judge, items))
            predicted = [v.label for v in got]
            margins = [stored_margin(v.raw) for v in got]
            groups = [group_of(r) for r in rows]
            result = {"set": path.name, "judge": str(judge.identity), **figures(labels, predicted, margins, groups), "by_kind": {}}
            for kind in sorted(set(kinds)):
                at = [i for i, k in enumerate(kinds) if k == kind]
                result["by_kind"][kind] = figures([labels[i] for i in at], [predicted[i] for i in at], [margins[i] for i in at])
            print(json.dumps(result))


if __name__ == "__main__":
    main()
