"""How fast is the learned judge? Turns per second on one core, beside the rule classifier in the same run.

Target: 1,000 turns/s on one core (issues 12 and 40). The process is pinned to one core with one BLAS
thread, items come from the labelled later turns (`labels-later.jsonl`, each with the conversation before it,
capped as when judging; the gold file when it is absent), repeated to `--turns`, and the best of `--rounds` timed
passes is reported for each model file (by default learned-6, the default's later-turn model, which reads the
conversation, learned-4, its predecessor, learned-3, the default's first-reply model, learned-2 and learned-1, the
linear model) and for the rules. Each learned figure includes featurising (the rules' features, the static
embeddings, the conversation's for learned-4 and learned-6) and the model. Prints one JSON line.

    .venv/bin/python benchmarks/learned_judge.py
    .venv/bin/python benchmarks/learned_judge.py --turns 20000 --rounds 5 --core 1
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
    os.environ[_var] = "false" if _var == "TOKENIZERS_PARALLELISM" else "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

from testbed.analysis.judge_quality.labelled_rows import judge_input  # noqa: E402
from testbed.judges.learned.judge import LearnedJudge  # noqa: E402
from testbed.judges.local import classify  # noqa: E402
from testbed.judges.verdict import JudgeInput  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "judges" / "training" / "labels-later.jsonl"
GOLD = REPO.parent / "shared" / "gold" / "dev.jsonl"
MODELS = [REPO / "judges" / "models" / f"{name}.json" for name in ("learned-6", "learned-4", "learned-3", "learned-2", "learned-1")]


def items(path: Path, n: int) -> list[JudgeInput]:
    """`n` judge inputs cycled from a labelled JSONL file, each with its conversation."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [replace(judge_input(rows[k % len(rows)]), turn_id=str(k)) for k in range(n)]


def best_rate(fn, work: list[JudgeInput], rounds: int) -> float:
    """The best turns/s of `rounds` timed passes of `fn` over `work`."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        fn(work)
        best = min(best, time.perf_counter() - started)
    return len(work) / best


def main() -> None:
    """Pin, time both judges, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--model", type=Path, nargs="+", default=MODELS, help="model files to time, side by side")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})
    source = TRAINING if TRAINING.exists() else GOLD
    work = items(source, args.turns)
    rates = {}
    for path in [p for p in args.model if p.exists()]:
        judge = LearnedJudge("learned", path)
        judge.judge_many(work[:100])
        rates[judge.version] = round(best_rate(judge.judge_many, work, args.rounds))
    rules = best_rate(lambda w: [classify(i.question, i.assistant, i.user_turn, context=i.context) for i in w], work, args.rounds)
    print(json.dumps({"turns": len(work), "source": source.name, "core": args.core, "learned_turns_per_s": rates,
                      "local_turns_per_s": round(rules)}))


if __name__ == "__main__":
    main()
