"""The native-vs-τ² equivalence benchmark's statistics (benchmarks/tau2_equivalence.py): pairs by task, user mode,
temperature and trial; errored episodes count as reward 0; TOST at the margin with tasks resampled whole."""

from __future__ import annotations

import sys

import pandas as pd

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from tau2_equivalence import equivalence, paired_frame  # noqa: E402


def episodes(score, tasks=9, trials=4, errored=()):
    rows = [dict(item_id=f"t{t}", user_mode="instructed", temperature=0.7, sample_index=k,
                 status="error" if (t, k) in errored else "done", task_score=None if (t, k) in errored else score(t, k))
            for t in range(tasks) for k in range(trials)]
    return pd.DataFrame(rows)


def test_the_same_rewards_are_equivalent():
    native = episodes(lambda t, k: float((t + k) % 2))
    result = equivalence(paired_frame(native, native.copy()), 0.10)
    assert result["pairs"] == 36 and result["tasks"] == 9 and result["difference"] == 0.0
    assert result["verdict"] == "equivalent" and result["tost_p_lower"] == 0.0 and result["tost_p_upper"] == 0.0


def test_an_errored_episode_is_a_zero_in_its_pair():
    native = episodes(lambda t, k: 1.0)
    tau2 = episodes(lambda t, k: 1.0, errored={(0, 0)})
    pairs = paired_frame(native, tau2)
    assert len(pairs) == 36
    assert pairs.set_index(["item_id", "sample_index"]).loc[("t0", 0), "difference"] == -1.0


def test_a_loop_that_fails_half_the_tasks_is_different():
    native = episodes(lambda t, k: 1.0)
    tau2 = episodes(lambda t, k: float(t % 2))
    result = equivalence(paired_frame(native, tau2), 0.10)
    assert result["verdict"] == "different" and result["ci90"][1] < -0.10


def test_noisy_small_samples_are_not_shown_equivalent():
    native = episodes(lambda t, k: float(t % 2 == 0), tasks=4, trials=1)
    tau2 = episodes(lambda t, k: float(t % 2 == 1), tasks=4, trials=1)
    assert equivalence(paired_frame(native, tau2), 0.10)["verdict"] == "not shown equivalent"


def test_one_task_is_undecided():
    native = episodes(lambda t, k: 1.0, tasks=1)
    assert equivalence(paired_frame(native, native.copy()), 0.10)["verdict"].startswith("undecided")
