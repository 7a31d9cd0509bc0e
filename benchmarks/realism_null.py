"""Does the realism AUC's interval hold 0.5, and its p-value stay above 0.05, when humans face humans?

Builds synthetic human turns for N contexts (templated requests and answers on 20 topics; a
turn depends on its context through the topic and the request, which the overlap features read),
draws 1 + k human turns per context (k of 1 or 2, as a condition's episodes do), and calls one of
them the real turn and the others simulated, at random. Both arms are then humans: the null holds
by construction. Each split runs the discriminator and records

- `new`: the shipped interval (`discriminator.null_interval` of the within-context permutation AUCs)
  and the permutation p-value, as `realism_table` reports them;
- `refit bootstrap`: the percentile interval of the AUC refitted on context resamples
  (`discriminator.refit_bootstrap_auc`), the other honest construction;
- `old`: the percentile interval of the AUC over context resamples of one fixed set of out-of-fold
  scores (no refit), the interval before issue 40.

It prints each interval's coverage of 0.5 with a Wilson 95 % interval, the share of splits with
p ≤ 0.05 (the false-positive rate, nominal 5 %), the mean AUC and each interval's mean width. One
BLAS thread.

    .venv/bin/python benchmarks/realism_null.py                      # 200 splits × 300 contexts, 200 resamples
    .venv/bin/python benchmarks/realism_null.py --splits 40 --resamples 50 --contexts 120
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from realism_vocabulary import ASPECTS, TOPICS  # noqa: E402
from testbed.analysis.realism.batched_logistic import out_of_fold_score_matrix  # noqa: E402
from testbed.analysis.realism.discriminator import (  # noqa: E402
    context_folds,
    null_interval,
    permutation_aucs,
    permutation_p,
    refit_bootstrap_auc,
    weighted_auc,
)
from testbed.analysis.realism.features import feature_matrix  # noqa: E402
from testbed.analysis.realism.measures import context_resample_weights, interval  # noqa: E402
from testbed.analysis.stats import wilson_interval  # noqa: E402

FILLER = ("the idea is simple once you see how each part depends on the previous one and why the order "
          "matters for the result you get at the end so it helps to start small and check each step").split()
CODE = ["def f(x):\n    return f(x - 1)", "SELECT * FROM users u JOIN orders o ON u.id = o.user_id;"]
TURN_WEIGHTS = np.array([6, 5, 4, 3, 5, 3, 3, 2, 3, 2, 3, 2, 1, 2, 3], dtype=float)


def human_turn(rng: np.random.Generator, topic: str, question: str) -> str:
    """One human next turn: a follow-up, thanks, a new request, pasted code, or a restated part of the request."""
    aspect, other = rng.choice(ASPECTS), rng.choice(TOPICS)
    kinds = [f"what about {aspect}?", f"ok but how does {topic} handle {aspect}?", f"Can you say more about {aspect}?",
             f"and if I care about {aspect} with {topic}, what changes?", "thanks", "thank you so much!", "ok",
             "great, thx", f"now write a short poem about {other}", f"Explain {other} the same way",
             f"it still fails:\n```\n{rng.choice(CODE)}\n```\nany idea?", "continue", "puedes explicarlo otra vez",
             f"no, I asked: {question}", f"Why would {topic} matter for {aspect}? I thought it was the other way around."]
    return str(kinds[rng.choice(len(kinds), p=TURN_WEIGHTS / TURN_WEIGHTS.sum())])


def null_split(contexts: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, simulated 0/1, row context) of one human-against-human split over `contexts` contexts."""
    rows = []
    for k in range(contexts):
        topic = TOPICS[int(rng.integers(len(TOPICS)))]
        question = str(rng.choice([f"How do I get started with {topic}?", f"Can you explain {topic} to me",
                                   f"write a short summary of {topic} for a beginner",
                                   f"I keep getting an error with {topic}:\n```\n{rng.choice(CODE)}\n```"]))
        answer = f"Sure! {topic.capitalize()} is worth learning. " + " ".join(rng.choice(FILLER, size=int(rng.integers(20, 120))))
        turns = [human_turn(rng, topic, question) for _ in range(1 + int(rng.integers(1, 3)))]
        real = int(rng.integers(len(turns)))
        rows += [{"context": k, "simulated": int(j != real), "text": t, "question": question, "answer": answer}
                 for j, t in enumerate(turns)]
    frame = pd.DataFrame(rows)
    features = feature_matrix(frame).to_numpy(dtype=np.float64)
    return features, frame["simulated"].to_numpy(dtype=np.int64), frame["context"].to_numpy(dtype=np.int64)


@dataclass
class Tally:
    """How often one interval held 0.5, and its widths."""

    held: int = 0
    widths: float = 0.0

    def add(self, lo: float, hi: float) -> None:
        """Count one split's interval."""
        self.held += int(lo <= 0.5 <= hi)
        self.widths += hi - lo


def old_interval(features, simulated, row_context, weights, folds: int, seed: int) -> tuple[float, float]:
    """The interval before issue 40: context resamples of one fixed set of out-of-fold scores, not refitted."""
    split = context_folds(row_context, folds=folds, seed=seed)
    scores = out_of_fold_score_matrix(features, simulated[None, :], np.ones((1, len(simulated))), split)[0]
    return interval(weighted_auc(scores, simulated, weights[:, row_context].astype(np.float64)))


def main() -> None:
    """Run the splits and print coverage, false-positive rate, mean AUC and widths."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--contexts", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=200, help="permutations, and bootstrap resamples, per split")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-refit-bootstrap", action="store_true", help="skip the refit bootstrap (halves the time)")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    tallies = {"new (permutation)": Tally(), "refit bootstrap": Tally(), "old (no refit)": Tally()}
    if args.no_refit_bootstrap:
        del tallies["refit bootstrap"]
    rejected, aucs = 0, []
    started = time.perf_counter()
    for split_number in range(args.splits):
        features, simulated, row_context = null_split(args.contexts, rng)
        seed = args.seed * 100_003 + split_number
        auc, null_aucs = permutation_aucs(features, simulated, row_context, folds=args.folds, seed=seed,
                                          permutations=args.resamples)
        aucs.append(auc)
        rejected += permutation_p(auc, null_aucs) <= 0.05
        tallies["new (permutation)"].add(*null_interval(auc, null_aucs))
        weights = context_resample_weights(args.contexts, args.resamples, np.random.default_rng([seed, 2]))
        if not args.no_refit_bootstrap:
            tallies["refit bootstrap"].add(*interval(refit_bootstrap_auc(features, simulated, row_context, weights,
                                                                         folds=args.folds, seed=seed)))
        tallies["old (no refit)"].add(*old_interval(features, simulated, row_context, weights, args.folds, seed))
    seconds = time.perf_counter() - started

    n = args.splits
    print(f"{n} human-against-human splits × {args.contexts} contexts, {args.resamples} resamples each, "
          f"seed {args.seed}, {seconds:.0f} s ({seconds / n:.2f} s a split)")
    print(f"mean AUC {np.mean(aucs):.3f} (sd {np.std(aucs):.3f})")
    for name, tally in tallies.items():
        lo, hi = wilson_interval(tally.held, n)
        print(f"  {name:<18} holds 0.5 in {tally.held}/{n} = {tally.held / n:.1%} (95% CI {lo:.1%}–{hi:.1%}), "
              f"mean width {tally.widths / n:.3f}")
    lo, hi = wilson_interval(rejected, n)
    print(f"  p ≤ 0.05 in {rejected}/{n} = {rejected / n:.1%} (95% CI {lo:.1%}–{hi:.1%}); nominal 5 %")


if __name__ == "__main__":
    main()
