"""How fast is the local judge? Turns per second on one core, on the gold turns or synthetic ones.

The local classifier must keep up with labelling whole stores (target: 20,000 turns/s on one
core). The gold turns are repeated to `--turns` (synthetic turns stand in when the gold file is
absent), the process is pinned to one core, and the best of `--rounds` timed passes is reported
(the least disturbed by other work on the machine). Prints one JSON line.

    .venv/bin/python benchmarks/local_judge.py
    .venv/bin/python benchmarks/local_judge.py --turns 50000 --rounds 7 --core 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

from testbed.judges.local import classify

REPO = Path(__file__).resolve().parents[1]
GOLD = REPO.parent / "shared" / "gold" / "dev.jsonl"

_WORDS = (
    "apples trees pizza students packs glue sticks money story river energy grid stack pointer capacity school "
    "fairies forest jewels pages textbook ideas dialogue letter summary paragraph language"
).split()


def gold_items(path: Path) -> list[tuple[str, str, str]]:
    """(question, answer, user turn) triples from a gold JSONL file."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["question"], r["assistant"], r["user_turn"]) for r in rows]


def synthetic_items(n: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """Turns of every kind (questions, echoes, loops, filler) over a few dozen question/answer pairs."""
    rnd = random.Random(seed)
    pairs = []
    for _ in range(40):
        topic = rnd.sample(_WORDS, 4)
        question = (
            f"Tom has {rnd.randint(2, 90)} {topic[0]} and buys {rnd.randint(2, 9)} more {topic[1]}. "
            f"How many {topic[0]} does he have?"
        )
        answer = " ".join(
            f"To find the {topic[i % 4]} we add {rnd.randint(1, 50)} and {rnd.randint(1, 50)} {topic[(i + 1) % 4]}."
            for i in range(12)
        )
        pairs.append((question, answer, topic))
    makers = (
        lambda q, a, t: f"Why did you add the {t[1]} in step 2?",
        lambda q, a, t: q,
        lambda q, a, t: a[: rnd.randint(60, 400)],
        lambda q, a, t: " ".join([f"The {t[2]} is {t[3]}."] * rnd.randint(5, 30)),
        lambda q, a, t: "Thanks!",
        lambda q, a, t: f"What is the best way to learn about {rnd.choice(_WORDS)}?",
        lambda q, a, t: "First, I need to figure out what the user wants.",
        lambda q, a, t: "I'm glad to help! What else can I do for you?",
    )
    return [(q, a, rnd.choice(makers)(q, a, t)) for q, a, t in (rnd.choice(pairs) for _ in range(n))]


def run(items: list[tuple[str, str, str]], rounds: int) -> float:
    """Seconds of the fastest pass over `items` (after one warm-up pass that fills the pair cache)."""
    for question, answer, turn in items[:2000]:
        classify(question, answer, turn)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for question, answer, turn in items:
            classify(question, answer, turn)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    """Parse options, pin the core, time the judge and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000, help="turns per timed pass (at least)")
    parser.add_argument("--rounds", type=int, default=5, help="timed passes; the fastest is reported")
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    parser.add_argument("--gold", type=Path, default=GOLD, help="gold JSONL file (synthetic turns if absent)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    source = "gold" if args.gold.exists() else "synthetic"
    base = gold_items(args.gold) if source == "gold" else synthetic_items(2_000)
    items = base * -(-args.turns // len(base))
    seconds = run(items, args.rounds)
    print(json.dumps({
        "turns_per_s": round(len(items) / seconds),
        "n": len(items),
        "us_per_turn": round(seconds / len(items) * 1e6, 2),
        "source": source,
        "rounds": args.rounds,
    }))


if __name__ == "__main__":
    main()
