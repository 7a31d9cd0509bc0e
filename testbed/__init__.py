"""usersim testbed: models take turns as assistant and simulated user; every user turn is stored and measured.

The Python API, for notebooks and scripts (the `testbed` command is built on the same calls):

    import testbed
    scenario = testbed.load_scenario("probe-gsm8k", limit=5)
    summary = testbed.run(scenario, store=".testbed/store.sqlite")
    store = testbed.open_store(".testbed/store.sqlite", readonly=True)
    turns = testbed.turns_df(store, summary.run_id, judge="local")

Names are imported on first use, so `import testbed` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = {
    "load_scenario": "testbed.specs.loader:load_scenario",
    "load_agent": "testbed.specs.loader:load_agent",
    "run_scenario": "testbed.runner:run_scenario",
    "RunSummary": "testbed.runner:RunSummary",
    "Store": "testbed.store:Store",
    "episodes_df": "testbed.store.frames:episodes_df",
    "messages_df": "testbed.store.frames:messages_df",
    "turns_df": "testbed.store.frames:turns_df",
    "labels_df": "testbed.store.frames:labels_df",
    "Transcript": "testbed.transcript:Transcript",
    "Message": "testbed.transcript:Message",
    "TerminationReason": "testbed.orchestrator:TerminationReason",
}
__all__ = ["open_store", "run", *_API]


def __getattr__(name: str) -> Any:
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


def run(scenario: Any, store: Any = None, *, run_id: str | None = None, show_progress: bool = False, backends: Any = None):
    """Run (or resume) a scenario into a store and return its RunSummary.

    `scenario` is a loaded scenario or what `load_scenario` takes (a built-in name or a YAML path);
    `store` is a Store or a path. The call blocks until the run ends; inside a running event loop
    (a notebook cell with top-level await) use `await testbed.run_scenario(...)` instead.
    """
    import asyncio

    from testbed.runner import run_scenario
    from testbed.specs.loader import load_scenario
    from testbed.store import Store

    resolved = load_scenario(scenario) if isinstance(scenario, str) or hasattr(scenario, "__fspath__") else scenario
    db = store if isinstance(store, Store) else Store(store)
    return asyncio.run(run_scenario(resolved, db, run_id=run_id, show_progress=show_progress, backends=backends))
