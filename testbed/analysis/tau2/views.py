"""The τ² kind's views (testbed.specs.kind_views): what compare, replay and the run loop show and do for τ² runs.

Registered in testbed/entries.py under `tau2`, the name the kind's entry gives; nothing outside the kind asks
whether a run is τ²'s, it asks `kind_views(run.kind)`. The τ² report is the kind's REPORTS entry (`report`).
"""

from __future__ import annotations

from testbed.analysis.tau2.annotation import annotation_turns
from testbed.analysis.tau2.compare_columns import compare_columns
from testbed.analysis.tau2.metrics import ERRORED_AS
from testbed.analysis.tau2.report_columns import REPORT_COLUMNS, REPORT_GROUPS, REPORT_RIGHT
from testbed.analysis.tau2.stored_faults import DETECTOR
from testbed.specs.kind_views import KindViews


def compare_cells(run) -> dict:
    """A comparison row's τ² cells from the run's frames (`RunFrames`): the task outcomes and the simulated user's
    faults (role drift under the run's judge)."""
    from testbed.analysis.tau2.compare import tau2_columns, tau2_fault_columns

    return {**tau2_columns(run), **tau2_fault_columns(run)}


def compare_paired(run, baseline) -> dict:
    """The run's reward against the baseline's on the episodes both have (tau2_compare.tau2_paired_with_native)."""
    from testbed.analysis.tau2.compare import tau2_paired_with_native

    native, other = baseline.episodes, run.episodes
    return tau2_paired_with_native(native, other, sorted(set(other.episode_id) & set(native.episode_id)))


def simulator_gap(run, reference) -> dict:
    """The run's reward lost to its simulated user: against `reference`, its assistant's run with the scripted user."""
    from testbed.analysis.tau2.simulator_gap import simulator_gap as gap

    return gap(run.episodes, reference.episodes)


def reference_user(scenario):
    """The scripted τ² user a simulator-gap comparison seats beside the scenario's model user (a ResolvedAgent); None
    when the scenario's user already is the scripted one (its rows are the reference)."""
    from testbed.scenarios.tau2.scripted_user import BACKEND, SCRIPTED_USER_AGENT
    from testbed.specs.loader import load_agent

    return None if scenario.user.spec.backend == BACKEND else load_agent(SCRIPTED_USER_AGENT)


VIEWS = KindViews("tau2", faults=DETECTOR, compare_cells=compare_cells, compare_paired=compare_paired,
                  compare_columns=compare_columns, simulator_gap=simulator_gap, reference_user=reference_user,
                  errored_as=ERRORED_AS, report_columns=tuple(REPORT_COLUMNS), report_groups=tuple(REPORT_GROUPS),
                  report_right=REPORT_RIGHT, annotation_turns=annotation_turns)
"""The τ² kind's views."""
