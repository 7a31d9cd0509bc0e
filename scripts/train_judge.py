"""Train the learned local judge: one seeded, reproducible command.

    .venv/bin/python scripts/train_judge.py                      # judges/training/labels*.jsonl -> judges/models/learned-4.json
    .venv/bin/python scripts/train_judge.py --learned-5          # learned-5's recipe, spent held-out part included -> judges/models/learned-5.json
    .venv/bin/python scripts/train_judge.py --learned-6          # learned-4's recipe, both spent held-out parts included -> judges/models/learned-6.json
    .venv/bin/python scripts/train_judge.py --kind linear --version linear-x --out /tmp/linear-x.json   # the linear kind, for comparison

Chooses the model's settings (boosted trees: learning rate, rounds, leaves; linear: C, class
weighting) and the follow-up threshold by 5-fold cross-validation grouped by conversation, on the conversation
feature set (`--features turn` gives learned-3's), leaving every held-out row out (`split: heldout`) except in
`--spent` files (a held-out part already scored once), refits on every other labelled turn, and writes the model (a small JSON file) with its CV
report inside, and its cross-validated follow-up error counts, with each turn's out-of-fold margin, beside it: over all
turns, and per scenario kind (`learned-4.cv-error-rates.probe.json`, `.dialogue.json`, ...), which is what to correct a
run of that kind with (`testbed report RUN --judge learned --correct-with judges/models/learned-6.cv-error-rates.probe.json`, for the default's later-turn model). The CV figures are also given per scenario kind
(probe, dialogue, ...), since one pooled figure hides how the judge reads later turns. `--learned-5` trains
learned-5 (`judge_training.LEARNED_5`: the turn's embedding projected to 8 columns, turns labelled in their
conversation weighted 2, the spent `labels-conversation-heldout.jsonl` read whole), which is not the default.
`--learned-6` trains learned-6: learned-4's recipe on learned-4's files and both spent held-out parts
(`judge_training.SPENT_FOR_LEARNED_6`). It never reads the gold dev set; score that once with
`testbed eval-judge --judge learned ../shared/gold/dev.jsonl`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from testbed.judges.learned.embedding import default_embedder
from testbed.judges.learned.features import CONVERSATION, FEATURE_SETS
from testbed.analysis.judge_quality.judge_training import ALL_KINDS, GRIDS, LEARNED_5, SPENT_FOR_LEARNED_6, train_with_error_rates

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "judges" / "training"


def main() -> None:
    """Train, report the CV figures, save."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[TRAINING / "labels.jsonl", TRAINING / "labels-later.jsonl",
                                                                TRAINING / "labels-conversation.jsonl"],
                        help="labelled JSONL files, pooled in order (grouped by conversation across files)")
    parser.add_argument("--spent", type=Path, nargs="*", default=[],
                        help="files read whole, held-out rows included: held-out parts already scored once")
    parser.add_argument("--projection", type=int, default=0, help="columns the turn's embedding is projected to (0: all of it)")
    parser.add_argument("--later-weight", type=float, default=1.0, help="weight of turns labelled in their conversation")
    parser.add_argument("--learned-5", action="store_true", help="learned-5's recipe and data, written to judges/models/learned-5.json")
    parser.add_argument("--learned-6", action="store_true", help="learned-4's recipe with both spent held-out parts, written to judges/models/learned-6.json")
    parser.add_argument("--out", type=Path, default=ROOT / "judges" / "models" / "learned-4.json")
    parser.add_argument("--version", default="learned-4")
    parser.add_argument("--features", choices=FEATURE_SETS, default=CONVERSATION, help="feature set (turn: learned-3's)")
    parser.add_argument("--kind", choices=sorted(GRIDS), default="trees", help="boosted trees (default) or linear")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.learned_5:
        args.projection, args.later_weight = LEARNED_5["projection_size"], LEARNED_5["later_weight"]
        args.spent = [TRAINING / "labels-conversation-heldout.jsonl"]
        args.out, args.version = ROOT / "judges" / "models" / "learned-5.json", "learned-5"
    if args.learned_6:
        args.spent = [TRAINING / name for name in SPENT_FOR_LEARNED_6]
        args.out, args.version = ROOT / "judges" / "models" / "learned-6.json", "learned-6"
    missing = [str(path) for path in [*args.data, *args.spent] if not path.is_file()]
    if missing:
        parser.error(f"no labelled file at {', '.join(missing)}: name JSONL files of labelled turns (judges/training/labels*.jsonl)")
    model, report, cv_errors = train_with_error_rates(args.data, args.version, default_embedder(), kind=args.kind, seed=args.seed,
                                                      features=args.features, projection_size=args.projection or None,
                                                      later_weight=args.later_weight, spent=args.spent)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.out)
    errors = args.out.with_name(args.out.stem + ".cv-error-rates.json")
    for kind, counts in cv_errors.items():
        counts.save(errors if kind == ALL_KINDS else errors.with_name(f"{args.out.stem}.cv-error-rates.{kind}.json"), judge="learned")
    chosen = report["chosen"]
    print(json.dumps({k: chosen[k] for k in ("params", "threshold", "kappa", "followup_f1", "followup_precision",
                                               "followup_recall", "kappa_followup")} | {"calibration_error": report["cv_calibration_error"]}))
    for kind, figures in report["cv_by_kind"].items():
        print(f"CV on {kind} turns: " + json.dumps(figures))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB, version {model.version}+{model.digest}); "
          f"{report['turns']} turns, {report['conversations']} conversations; CV error counts in {errors} and per kind beside it (for report --correct-with)")


if __name__ == "__main__":
    main()
