"""The numbers of `testbed plot`'s τ² figure: a τ² run's mean reward against its simulated users' fault rate, one point
per user model × user temperature (testbed.analysis.tau2.faults gives each episode's faults).

Its entry `TAU2_USERS` is registered in testbed/entries.py with the other figures; drawn by
testbed.analysis.tau2.figure_drawing, so building the numbers never imports matplotlib.
"""

from __future__ import annotations

import pandas as pd

from testbed.analysis.figures.registry import FigureInputs
from testbed.analysis.stats import wilson_interval
from testbed.analysis.tau2.fault_error_rates import load_detector_errors
from testbed.analysis.tau2.faults import fault_frame
from testbed.analysis.tau2.headline import headline_cells
from testbed.analysis.tau2.metrics import reward_interval
from testbed.specs.tau2 import domain_of
from testbed.specs.registries import FigureEntry
from testbed.store.turn_reviews import turn_reviews_df

USERS_COLUMNS = ["user_model", "user_temperature", "episodes", "errored_episodes", "unchecked", "checked", "scored",
                 "reward", "reward_lo", "reward_hi", "reward_interval", "fault_episodes", "fault_share", "fault_lo", "fault_hi",
                 "x_share", "x_lo", "x_hi", "x_raw", "x_raw_lo", "x_raw_hi", "x_n", "x_detector", "x_correction", "x_measure"]
"""`tau2_users`' frame: what each point is, its counts, the mean reward and the rules' any-fault share with their 95 %
intervals, and the x the figure draws (`x_*`: the headline share, testbed.analysis.tau2.headline)."""
MIN_POINTS = 2
"""Points the figure needs: one user condition alone has nothing to compare with."""


def tau2_users(inputs: FigureInputs) -> tuple[pd.DataFrame, str | None]:
    """Per user model × user temperature of a τ² run's finished episodes: the mean reward (y) with its 95 % interval
    (Wilson's on 0/1 rewards, else a seeded bootstrap: `reward_interval`) over the scored ones, and the share of
    episodes with any simulated-user fault (x) with a Wilson interval over the checked ones (their task was found
    in the installed τ²). Errored episodes are left out of both and counted (`errored_episodes`), as are episodes
    whose faults could not be checked (`unchecked`). Role drift counts as a fault when the judge labelled drift.

    The x drawn (`x_share` with `x_lo`/`x_hi`) is the headline share corrected with its detector's measured error
    (judges/faults-gold/error-rates.json): where a whole-conversation reviewer ran, the share of failed episodes it
    found hindered (critical_hindered), else the rules' any-fault share; the raw share with its Wilson interval is
    `x_raw*`. Where the detector's error was not measured, x is the raw share and `x_correction` says "uncorrected"."""
    not_tau2 = "no episode of a τ² task the installed τ² package has: not a τ² run"
    if not inputs.episodes.dataset.map(domain_of).notna().any():
        return pd.DataFrame(columns=USERS_COLUMNS), not_tau2
    faults = fault_frame(inputs.store, inputs.run_id, inputs.judge)
    if not faults.checked.any():
        return pd.DataFrame(columns=USERS_COLUMNS), not_tau2
    reviewers = inputs.store.turn_reviewers(inputs.run_id)
    review = (reviewers[-1], turn_reviews_df(inputs.store, inputs.run_id, reviewers[-1])) if reviewers else None
    errors = load_detector_errors()
    rows = []
    for (model, temperature), g in faults.groupby(["user_model", "user_temperature"], sort=True):
        done = g[g.status == "done"]
        checked, rewards = done[done.checked], [float(r) for r in done.reward.dropna()]
        lo, hi, kind = reward_interval(rewards)
        hits = int(checked.any_fault.sum())
        f_lo, f_hi = wilson_interval(hits, len(checked))
        rows.append({"user_model": model, "user_temperature": float(temperature), "episodes": len(g),
                     "errored_episodes": int((g.status == "error").sum()), "unchecked": int((~done.checked).sum()),
                     "checked": len(checked), "scored": len(rewards),
                     "reward": sum(rewards) / len(rewards) if rewards else float("nan"), "reward_lo": lo, "reward_hi": hi,
                     "reward_interval": kind, "fault_episodes": hits,
                     "fault_share": hits / len(checked) if len(checked) else float("nan"), "fault_lo": f_lo, "fault_hi": f_hi,
                     **x_of(headline_cells(g.set_index("episode_id"), review, errors))})
    frame = pd.DataFrame(rows, columns=USERS_COLUMNS)
    drawn = frame[frame.reward.notna() & frame.x_share.notna()].reset_index(drop=True)
    if len(drawn) < MIN_POINTS:
        return drawn.iloc[0:0], (f"needs {MIN_POINTS} user model × temperature points with a reward and checked faults; "
                                 f"this run has {len(drawn)}")
    return drawn, None


def x_of(headline: dict) -> dict:
    """The figure's x from a group's headline cells: the reviewer's failed-hindered share when it has scored failed
    episodes, else the rules' any-fault share; corrected where its detector's error was measured, else raw."""
    name = "failed_hindered_review" if headline.get("failed_hindered_review_n") else "rules_any"
    measure = "critical_hindered among failed episodes" if name != "rules_any" else "any fault"
    corrected = not pd.isna(headline[f"{name}_corrected"])
    suffix = "_corrected" if corrected else ""
    return {"x_share": headline[f"{name}{suffix}"], "x_lo": headline[f"{name}{suffix}_lo"],
            "x_hi": headline[f"{name}{suffix}_hi"], "x_raw": headline[name], "x_raw_lo": headline[f"{name}_lo"],
            "x_raw_hi": headline[f"{name}_hi"], "x_n": headline[f"{name}_n"], "x_detector": headline[f"{name}_detector"],
            "x_correction": headline[f"{name}_correction"], "x_measure": measure}


def x_label(frame: pd.DataFrame) -> str:
    """The x-axis label: what share, by which detector(s), corrected or not."""
    parts = sorted({f"{m}, by {d}, {'corrected' if c.startswith('corrected') else 'uncorrected'}"
                    for m, d, c in zip(frame.x_measure, frame.x_detector, frame.x_correction)})
    return "simulated-user fault share (0–1): " + "; ".join(parts)


TAU2_USERS = FigureEntry("tau2-users", "τ² reward vs simulated-user fault rate", tau2_users,
                         "testbed.analysis.tau2.figure_drawing:draw_tau2_users", needs_labels=False)
"""The figure of `tau2_users`, drawn without a judge's labels (role drift joins the faults only when the judge has them)."""
