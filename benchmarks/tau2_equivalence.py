"""Is the testbed's loop τ²'s loop? The same model, tasks and trials under `native` and under the `tau2` framework
(τ²'s own Orchestrator), with the paired reward difference, its interval and an equivalence verdict.

Both runs are the scenario's own (`testbed run --framework native` and `--framework tau2`, resumable: a second
invocation finishes what the first left), so both loops face the same user: with the scripted user
(`user: scripted`) τ²'s orchestrator is given the same scripted user as its user. An episode pairs with the one of
the same task, user mode, temperature and trial in the other run; an errored episode counts as reward 0 (τ²'s
runner's convention, the report's default) and the number errored is shown.

The verdict is two one-sided tests (TOST) at ±`--margin` (default 0.10) on the mean paired difference, at
α = 0.05 each: equivalent when both reject, which is when the 90 % interval lies inside the margin. Trials of one
task are not independent, so the tests resample tasks, not episodes: a cluster bootstrap over tasks of each task's
mean difference over its trials. Each one-sided p-value is the share of resampled means on the far side of its
margin (H0 lower: mean ≤ −margin; H0 upper: mean ≥ +margin).

    .venv/bin/python benchmarks/tau2_equivalence.py --assistant agents/qwen2.5-coder-0.5b.yaml --trials 4 --temperature 0.7
    .venv/bin/python benchmarks/tau2_equivalence.py --spec MY_TAU2_SCENARIO.yaml --store /tmp/eq.sqlite --json out.json

Without `--spec` the scenario is written from the arguments (benchmarks/tau2_bench_specs.py): the assistant at
`--temperature`, the scripted τ² user by default, every task of `--domain`, `--trials` trials.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tau2_bench_specs import REPO, write_tau2_scenario

from testbed.analysis.tau2.metrics import bootstrap_means, counted_rewards
from testbed.running.runner import run_scenario
from testbed.specs.loader import ResolvedScenario, load_scenario
from testbed.store import Store
from testbed.store.frames import episodes_df

PAIR_KEY = ["item_id", "user_mode", "temperature", "sample_index"]
"""What makes two episodes of the two loops one pair: the same task, user mode, temperature and trial."""
RESAMPLES = 20_000


def paired_frame(native: pd.DataFrame, tau2: pd.DataFrame) -> pd.DataFrame:
    """One row per pair both runs have: its task, both rewards (errored as 0) and their difference (tau2 − native)."""
    def rewards(episodes: pd.DataFrame) -> pd.DataFrame:
        counted = counted_rewards(episodes)
        return counted[PAIR_KEY + ["task_score"]]

    both = rewards(native).merge(rewards(tau2), on=PAIR_KEY, suffixes=("_native", "_tau2"))
    return both.assign(difference=both.task_score_tau2 - both.task_score_native)


def interval(means: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of bootstrap means at `level` (nan without any)."""
    if not len(means):
        return math.nan, math.nan
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


def equivalence(pairs: pd.DataFrame, margin: float, alpha: float = 0.05) -> dict:
    """The paired result: mean difference (tau2 − native), its 90 % (1 − 2α) and 95 % task-bootstrap intervals, the
    two one-sided p-values and the verdict."""
    per_task = pairs.groupby("item_id").difference.mean().to_numpy()
    means = bootstrap_means(per_task, RESAMPLES)
    lo, hi = interval(means, 1 - 2 * alpha)
    p_lower = float((means <= -margin).mean()) if len(means) else math.nan
    p_upper = float((means >= margin).mean()) if len(means) else math.nan
    verdict = ("undecided: fewer than two tasks" if math.isnan(lo) else
               "equivalent" if max(p_lower, p_upper) < alpha else
               "different" if hi < -margin or lo > margin else "not shown equivalent")
    return {"pairs": len(pairs), "tasks": len(per_task), "reward_native": float(pairs.task_score_native.mean()),
            "reward_tau2": float(pairs.task_score_tau2.mean()), "difference": float(pairs.difference.mean()),
            "ci90": [lo, hi], "ci95": list(interval(means, 0.95)), "tost_p_lower": p_lower, "tost_p_upper": p_upper,
            "margin": margin, "verdict": verdict}


async def run_both(scenario: ResolvedScenario, store: Store) -> dict[str, dict]:
    """Run (or resume) the scenario under native, then under τ²'s orchestrator; each run's id, counts and wall time."""
    out = {}
    for framework in ("native", "tau2"):
        started = time.perf_counter()
        summary = await run_scenario(scenario, store, framework=framework, show_progress=True)
        out[framework] = {"run_id": summary.run_id, "done": summary.done, "errors": summary.errors,
                          "planned": summary.planned, "wall_s": round(time.perf_counter() - started, 1)}
    return out


def main() -> None:
    """Run both loops, pair their episodes and print the equivalence result (and write it as JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=None, help="a τ² scenario spec (kind: tau2); else one is written")
    parser.add_argument("--assistant", type=Path, default=REPO / "agents" / "qwen2.5-coder-0.5b.yaml")
    parser.add_argument("--user", type=Path, default=REPO / "agents" / "tau2-scripted-user.yaml")
    parser.add_argument("--domain", default="mock")
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks (default: all)")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=0.7, help="the assistant's sampling temperature")
    parser.add_argument("--folder", type=Path, default=Path(".testbed/equivalence"), help="where a written scenario goes")
    parser.add_argument("--store", type=Path, default=Path(".testbed/equivalence.sqlite"))
    parser.add_argument("--margin", type=float, default=0.10, help="the equivalence margin on the reward difference")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args()
    args.store.parent.mkdir(parents=True, exist_ok=True)
    store = Store(args.store)
    if args.spec is not None:
        scenario = load_scenario(args.spec)
    else:
        scenario = write_tau2_scenario(args.folder, f"equivalence-{args.domain}-{args.assistant.stem}", assistant=args.assistant,
                                       user=args.user, domain=args.domain, limit=args.limit, trials=args.trials,
                                       assistant_temperature=args.temperature)
    runs = asyncio.run(run_both(scenario, store))
    frames = {f: episodes_df(store, r["run_id"], exact=True) for f, r in runs.items()}
    pairs = paired_frame(frames["native"], frames["tau2"])
    result = {"spec": str(scenario.path), "runs": runs, **equivalence(pairs, args.margin)}
    for framework, frame in frames.items():
        result["runs"][framework]["errored"] = int((frame.status == "error").sum())
    print(json.dumps(result, indent=2))
    print(f"\nnative {result['reward_native']:.3f} vs tau2 {result['reward_tau2']:.3f} over {result['pairs']} pairs "
          f"({result['tasks']} tasks): difference {result['difference']:+.3f}, 90% CI {result['ci90'][0]:+.3f}…"
          f"{result['ci90'][1]:+.3f} (tasks resampled); TOST at ±{args.margin}: {result['verdict']} "
          f"(one-sided p = {result['tost_p_lower']:.3f} / {result['tost_p_upper']:.3f})")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
