"""Storing a run's simulated-user faults once, when the run ends and when a judge finishes, through its kind's views.

Kept apart from the run loop so `testbed judge` stores a judge's faults without importing backends and frameworks.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from testbed.specs.registries import kind_views
from testbed.store import JudgeIdentity, Store
from testbed.terminal_text import neutralised


def store_user_faults(store: Store, run_id: str, kind: str, console: Console | None) -> None:
    """Store the simulated-user faults of the run's episodes not yet checked, once, as the run ends, when its kind's views
    detect faults (testbed.specs.kind_views): reports, compare and replay then read them without the kind's packages.
    A detector that fails costs the run nothing: the warning says how to store them later."""
    detector = kind_views(kind).faults
    if detector is None:
        return
    try:
        detector.store_faults(store, run_id)
    except Exception as exc:  # noqa: BLE001 - the episodes are stored; the faults can be stored again later
        why = escape(neutralised(f"{type(exc).__name__}: {exc}"))
        (console or Console(stderr=True)).print(f"[yellow]user faults of {run_id} not stored ({why}); "
                                                f"`testbed judge {run_id}` stores them[/yellow]")


def store_judged_faults(store: Store, run_id: str, judge: JudgeIdentity) -> None:
    """Store the simulated-user faults `judge`'s labels imply (role drift) under the judge's identity, with the rules'
    faults of any episode still without them, once, as judging ends (`testbed judge`, a comparison), when the run's
    kind detects faults (testbed.specs.kind_views)."""
    run = store.find_run(run_id)
    detector = kind_views(run.kind if run is not None else None).faults
    if detector is not None:
        detector.store_judged_faults(store, run_id, judge)
