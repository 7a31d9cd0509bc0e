"""usersim testbed: models take turns as assistant and simulated user; every user turn is stored and measured.

The Python API, for notebooks and scripts (the `testbed` command is built on the same calls):

    import testbed
    scenario = testbed.load_scenario("probe-gsm8k", limit=5)      # or testbed.load_sweep("sweeps/awareness.yaml")
    summary = testbed.run(scenario, store=".testbed/store.sqlite")
    testbed.judge(".testbed/store.sqlite", summary.run_id)          # the local classifier labels every user turn
    store = testbed.open_store(".testbed/store.sqlite", readonly=True)
    turns = testbed.turns_df(store, summary.run_id, judge="local")
    table = testbed.compare("dialogue-gsm8k", ["native", "langgraph"], store=store.path).frame   # testbed compare

Names are imported on first use, so `import testbed` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testbed.backends.agent_protocol import Agent, AgentMessage, AgentTurn
    from testbed.analysis.perturbation import perturbation_effects
    from testbed.analysis.reports.probe import report_frame
    from testbed.analysis.figures.run_graphs import RunGraphs, draw_run_graphs
    from testbed.running.comparison import Comparison, compare, load_comparable, run_comparison
    from testbed.judges.human_labels import import_human_labels
    from testbed.loop.orchestrator import TerminationReason
    from testbed.running.runner import RunSummary, run_scenario
    from testbed.specs.loader import load_agent, load_scenario
    from testbed.specs.sweep import load_sweep
    from testbed.store import Store
    from testbed.store.frames import episodes_df, labels_df, messages_df, turns_df
    from testbed.store.labels import default_identity
    from testbed.running.sweep_runner import run_sweep
    from testbed.transcript import Message, Transcript

__version__ = "0.1.0"

from testbed import entries as _entries  # noqa: E402,F401  (fills the registries before any spec is read)

_API = {
    "load_scenario": "testbed.specs.loader:load_scenario",
    "load_agent": "testbed.specs.loader:load_agent",
    "load_sweep": "testbed.specs.sweep:load_sweep",
    "run_scenario": "testbed.running.runner:run_scenario",
    "run_sweep": "testbed.running.sweep_runner:run_sweep",
    "compare": "testbed.running.comparison:compare",
    "run_comparison": "testbed.running.comparison:run_comparison",
    "load_comparable": "testbed.running.comparison:load_comparable",
    "Comparison": "testbed.running.comparison:Comparison",
    "report_frame": "testbed.analysis.reports.probe:report_frame",
    "perturbation_effects": "testbed.analysis.perturbation:perturbation_effects",
    "draw_run_graphs": "testbed.analysis.figures.run_graphs:draw_run_graphs",
    "RunGraphs": "testbed.analysis.figures.run_graphs:RunGraphs",
    "import_human_labels": "testbed.judges.human_labels:import_human_labels",
    "RunSummary": "testbed.running.runner:RunSummary",
    "Store": "testbed.store:Store",
    "episodes_df": "testbed.store.frames:episodes_df",
    "messages_df": "testbed.store.frames:messages_df",
    "turns_df": "testbed.store.frames:turns_df",
    "labels_df": "testbed.store.frames:labels_df",
    "default_identity": "testbed.store.labels:default_identity",
    "Transcript": "testbed.transcript:Transcript",
    "Message": "testbed.transcript:Message",
    "TerminationReason": "testbed.loop.orchestrator:TerminationReason",
    "Agent": "testbed.backends.agent_protocol:Agent",
    "AgentTurn": "testbed.backends.agent_protocol:AgentTurn",
    "AgentMessage": "testbed.backends.agent_protocol:AgentMessage",
}
"""Public name → `module:attribute`, imported on first use (module `__getattr__`), so `import testbed` stays cheap."""

__all__ = [
    "Agent", "AgentMessage", "AgentTurn", "Comparison", "Message", "RunGraphs", "RunSummary", "Store", "TerminationReason", "Transcript",
    "compare", "default_identity", "draw_run_graphs", "episodes_df", "import_human_labels", "judge", "labels_df", "load_agent",
    "load_comparable", "load_scenario", "load_sweep", "messages_df", "open_store", "perturbation_effects",
    "report_frame", "run", "run_comparison", "run_scenario", "run_sweep", "turns_df",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, and keep it here for the next."""
    target = _API.get(name)
    if target is None:
        raise AttributeError(f"module 'testbed' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def open_store(path: Any = None, *, readonly: bool = False):
    """The SQLite store at `path` (default `$TESTBED_STORE` or `.testbed/store.sqlite`); `readonly` for reading only."""
    from testbed.store import Store

    return Store(path, readonly=readonly)


def run(scenario: Any, store: Any = None, *, run_id: str | None = None, show_progress: bool = False, backends: Any = None,
        framework: str | None = None):
    """Run (or resume) a scenario or a sweep into a store and return its RunSummary.

    `scenario` is a loaded scenario or sweep, or what `load_scenario` takes (a built-in name or a
    YAML path; a file with `kind: sweep` is loaded as a sweep); `store` is a Store or a path. The
    call blocks until the run ends; inside a running event loop (a notebook cell with top-level
    await) use `await testbed.run_scenario(...)` or `await testbed.run_sweep(...)` instead.
    `backends` replaces the agents' backends: by role for a scenario, by agent name for a sweep.
    `framework` runs a scenario's turn loops (a name of testbed.specs.registries.FRAMEWORKS; default the baseline,
    `default_framework()`); a sweep runs with the baseline.
    """
    import asyncio

    from testbed.running.runner import run_scenario
    from testbed.specs.loader import load_scenario
    from testbed.specs.registries import default_framework
    from testbed.specs.sweep import ResolvedSweep, find_sweep, load_sweep
    from testbed.running.sweep_runner import run_sweep

    resolved = scenario
    if isinstance(scenario, str) or hasattr(scenario, "__fspath__"):
        path = find_sweep(str(scenario))
        resolved = load_sweep(path) if path is not None else load_scenario(scenario)
    db = _store(store)
    framework = framework or default_framework()
    if isinstance(resolved, ResolvedSweep):
        from testbed.frameworks.base import runs_sweeps

        if not runs_sweeps(framework):
            raise ValueError(f"a sweep runs the native probe, not framework {framework!r}")
        return asyncio.run(run_sweep(resolved, db, run_id=run_id, show_progress=show_progress, backends=backends))
    return asyncio.run(run_scenario(resolved, db, run_id=run_id, show_progress=show_progress, backends=backends,
                                    framework=framework))


def judge(store: Any, run_id: str, judge: str | None = None, *, model: Any = None, show_progress: bool = False):
    """Label the run's user turns not yet scored by `judge` (a built-in name or a judge spec path, default the fast
    `learned` judge; `model`
    rebinds an LLM judge's agent) and return the JudgeSummary; earlier labels stay."""
    import asyncio

    from testbed.judges.runner import judge_run
    from testbed.judges.specs import load_judge
    from testbed.store.labels import DEFAULT_JUDGE

    return asyncio.run(judge_run(_store(store), run_id, load_judge(judge or DEFAULT_JUDGE, model=model), show_progress=show_progress))


def _store(store: Any):
    from testbed.store import Store

    return store if isinstance(store, Store) else Store(store)
