"""How fast is the realism table? 50,000 synthetic user turns, on one core, stage by stage.

Target: well under a minute for 50,000 turns (issue acceptance), aimed at under 20 s: 10,000
contexts, each with one real turn and four simulated ones across two conditions, answers of 50 to
250 words, 1,000 bootstrap resamples, and the static MiniLM embedder when its package is
installed (the cosine stage is skipped with a note otherwise). The process pins itself to one core
with one BLAS thread; from a shell the same is `taskset -c 0 .venv/bin/python benchmarks/realism_speed.py`.
Prints seconds per stage (features, embedding, discriminator without and with its refitted
permutations, bootstrap) and the whole
`realism_table` call, as a small table.

    .venv/bin/python benchmarks/realism_speed.py
    .venv/bin/python benchmarks/realism_speed.py --contexts 2000 --resamples 200
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
    os.environ[_var] = "false" if _var == "TOKENIZERS_PARALLELISM" else "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from testbed.analysis.realism.table import prepare_turns, realism_table, unit_embeddings  # noqa: E402
from testbed.analysis.realism.discriminator import PERMUTATIONS, discriminate  # noqa: E402
from testbed.analysis.realism.features import feature_matrix  # noqa: E402
from testbed.analysis.realism.measures import bootstrap_jsd, bootstrap_median, context_resample_weights  # noqa: E402
from testbed.judges.taxonomy import LABELS  # noqa: E402

WORDS = ("the a loop function error value list table thanks please why how what explain more again code "
         "python data file step answer example second first result test case use make change fix").split()
TURN_SHAPES = ["what about {w}?", "thanks", "can you explain {w} again", "ok", "now write a {w} function",
               "it fails:\n```\nfor x in {w}:\n    print(x)\n```", "why {w} and not {w}?", "continue"]


def synthetic_turns(contexts: int, seed: int = 0) -> pd.DataFrame:
    """`contexts` × (1 real + 2 simulated under each of 2 conditions) turns, labelled at random."""
    rng = np.random.default_rng(seed)
    answers = [" ".join(rng.choice(WORDS, size=int(rng.integers(50, 250)))) for _ in range(contexts)]
    questions = [" ".join(rng.choice(WORDS, size=int(rng.integers(5, 40)))) + "?" for _ in range(contexts)]

    def turn() -> str:
        return str(rng.choice(TURN_SHAPES)).replace("{w}", str(rng.choice(WORDS)))

    rows = []
    for k in range(contexts):
        shared = {"context_id": f"c{k:06d}", "answer": answers[k], "question": questions[k]}
        rows.append({**shared, "source": "real", "user_model": "human", "user_mode": "human", "temperature": 0.0,
                     "text": turn()})
        for model in ("model-a", "model-b"):
            for _ in range(2):
                rows.append({**shared, "source": "simulated", "user_model": model, "user_mode": "plain",
                             "temperature": 0.7, "text": turn() + (" " + questions[k] if model == "model-b" else "")})
    frame = pd.DataFrame(rows)
    labels = rng.choice(LABELS, size=len(frame))
    return frame.assign(label=labels, followup=labels == "genuine_followup")


def the_embedder():
    """The static MiniLM embedder, or None (with the reason) when its package is not installed."""
    try:
        from testbed.judges.learned.embedding import default_embedder

        return default_embedder(), ""
    except Exception as error:  # noqa: BLE001 - any failure to load means "skip the cosine stage"
        return None, f"embedding skipped: {error}"


def timed(fn):
    """(result, seconds) of one call."""
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def main() -> None:
    """Pin to one core, build the frame, time each stage and the whole table, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--contexts", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--core", type=int, default=0)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    frame = synthetic_turns(args.contexts)
    embedder, note = the_embedder()
    if embedder is not None:
        embedder.encode(["warm up"])

    stages: dict[str, float] = {}
    _, stages["features"] = timed(lambda: feature_matrix(frame))
    if embedder is not None:
        _, stages["embedding"] = timed(lambda: unit_embeddings(frame["text"], embedder))
    prepared = prepare_turns(frame)
    one = prepared.frame.loc[prepared.frame["user_model"].isin(["human", "model-a"])]
    contexts = one["context_id"].to_numpy()
    _, row_context = np.unique(contexts, return_inverse=True)
    simulated = (one["source"] != "real").to_numpy(dtype=np.int64)
    features = prepared.features[one.index.to_numpy()]
    weights = context_resample_weights(args.contexts, args.resamples, np.random.default_rng(0))
    _, stages["discriminator, no permutation (1 condition)"] = timed(
        lambda: discriminate(features, simulated, row_context, folds=5, seed=0, permutations=0))
    _, stages[f"discriminator, {PERMUTATIONS} permutations (1 condition)"] = timed(
        lambda: discriminate(features, simulated, row_context, folds=5, seed=0))
    counts = np.ones((args.contexts, len(LABELS)))
    _, stages["bootstrap (1 condition)"] = timed(lambda: (
        context_resample_weights(args.contexts, args.resamples, np.random.default_rng(0)),
        bootstrap_jsd(counts, counts, weights),
        bootstrap_median(np.random.default_rng(2).random(args.contexts), weights)))
    _, stages["realism_table (all, 2 conditions)"] = timed(
        lambda: realism_table(frame, resamples=args.resamples, embedder=embedder))

    print(f"{len(frame):,} turns, {args.contexts:,} contexts, {args.resamples} resamples, core {args.core}")
    width = max(len(k) for k in stages)
    for name, seconds in stages.items():
        print(f"  {name:<{width}}  {seconds:7.2f} s")
    if note:
        print(f"  ({note})")


if __name__ == "__main__":
    main()
