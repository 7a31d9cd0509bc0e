"""Sweep specs: one scenario over many models × datasets, with its own conditions varying within.

A sweep names its axes (`agents`, `user` or `users`, `datasets`) and the kind of scenario each *cell* runs
(`scenario: probe`, the default, `dialogue` or `tau2`); every other field is that scenario's own field
(temperatures, perturbations, max_user_turns, domain, …), validated by the scenario's spec model. A
sweep expands into one cell per assistant agent × simulated user × dataset, all written into one run: episode
ids are stable as in any scenario, so a rerun resumes the run, and in a probe every answer is
shared by the user-turn variants of its item. `user: self` makes each agent its own simulated
user; naming an agent instead makes that one model the user facing every assistant, and `users:` lists several
that each face every assistant. A kind without a dataset field (tau2: its cells name a `domain`) takes no
`datasets:`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_serializer

from testbed.specs.agent import Strict
from testbed.specs.errors import SpecError, spec_error_from_validation
from testbed.specs.files import is_sweep, read_text
from testbed.specs.loader import ResolvedAgent, ResolvedScenario, experiment_of, load_agent, named_path, read_yaml, spec_hash
from testbed.specs.registries import KINDS, registered
from testbed.specs.scenario import known_dataset

SELF = "self"
CellKind = registered(KINDS, accepts=lambda entry: entry.sweepable)
"""The scenario kinds a sweep can vary (ScenarioKindEntry.sweepable): those whose episodes open with a dataset item, and
τ²'s tasks, whose cells vary the assistant and the user over one domain."""
SET_BY_SWEEP = ("assistant", "dataset")
"""Scenario fields a sweep fills in per cell, so the file may not set them."""


class SweepSpec(Strict):
    """The sweep's own fields: its name, the axes it varies, and the kind of scenario each cell runs.

    `agents`, `user` and `users` name agent specs (a path relative to this file, or a built-in name);
    `user: self` (the default) lets each agent play its own simulated user; `users` (instead of `user`) makes each
    of several agents the simulated user of every assistant. `datasets` is required for a kind whose cells open
    with a dataset item and refused for one without a dataset field (tau2).
    """

    LEFT_OUT_AT_DEFAULT = ("users", "datasets")

    kind: Literal["sweep"]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    scenario: CellKind = "probe"
    agents: list[str] = Field(min_length=1)
    user: str = SELF
    users: list[str] | None = Field(None, min_length=1)
    datasets: list[str] | None = Field(None, min_length=1)

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if len(set(value)) != len(value):
            raise ValueError("datasets repeat | fix: list each dataset once")
        return [known_dataset(v) for v in value]

    @field_validator("agents", "users")
    @classmethod
    def _agents(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("agents repeat | fix: list each agent once")
        return value



@dataclass(frozen=True)
class ResolvedSweep:
    """A sweep with its agents and prompt resolved, and the scenarios (cells) it expands into."""

    spec: SweepSpec
    conditions: BaseModel
    """The cell scenario's spec as the sweep wrote it (its first cell's; cells differ only in agents and dataset)."""
    path: Path
    agents: tuple[ResolvedAgent, ...]
    user: ResolvedAgent | None
    """The fixed simulated user, or None when each agent plays its own (or `users` lists several)."""
    user_prompt: str | None
    cells: tuple[ResolvedScenario, ...]
    users: tuple[ResolvedAgent, ...] = ()
    """The simulated users that each face every assistant (`users:`); empty under `user`."""

    def as_dict(self) -> dict[str, Any]:
        """The fully resolved sweep, stored with the run."""
        conditions = self.conditions.model_dump(mode="json", exclude={"name", "kind", "dataset", "assistant", "user"})
        users = {"users": [u.as_dict() for u in self.users]} if self.users else {"user": self.user.as_dict() if self.user else SELF}
        return {
            "sweep": self.spec.model_dump(mode="json"),
            "conditions": conditions,
            "path": str(self.path),
            "agents": [a.as_dict() for a in self.agents],
            **users,
            "user_prompt": self.user_prompt,
            "cells": [{"assistant": c.assistant.spec.name, "user": c.user.spec.name, "dataset": c.spec.dataset} for c in self.cells],
        }

    def fingerprint(self) -> str:
        """A short hash of what the sweep's experiment is, the end of its run id: agent file paths and where the
        servers live are left out (testbed.specs.loader.experiment_of), so a sweep whose servers moved resumes."""
        return spec_hash(self._blob(experiment_of))

    def as_made_under(self, stored_fingerprint: str | None) -> "ResolvedSweep":
        """This sweep as the run stored with `stored_fingerprint` planned it: its cells with the ids they had before
        ids left out where servers live when the run was made then, else unchanged."""
        if stored_fingerprint in (None, self.fingerprint()) or stored_fingerprint != self.legacy_fingerprint():
            return self
        return replace(self, cells=tuple(c.with_legacy_ids() for c in self.cells))

    def legacy_fingerprint(self) -> str:
        """The hash sweep run ids ended in before they left out where servers live: a run made then still resumes."""
        return spec_hash(self._blob(lambda agent: {k: v for k, v in agent.items() if k != "path"}))

    def _blob(self, agent_part) -> dict[str, Any]:
        blob = self.as_dict()
        blob.pop("path")
        blob["agents"] = [agent_part(a) for a in blob["agents"]]
        if isinstance(blob.get("user"), dict):
            blob["user"] = agent_part(blob["user"])
        if "users" in blob:
            blob["users"] = [agent_part(u) for u in blob["users"]]
        return blob


def is_sweep_file(path: Path) -> bool:
    """True when the YAML file at `path` is a sweep (`is_sweep`; any read problem: False, left to the loader)."""
    try:
        return is_sweep(read_yaml(path))
    except (SpecError, OSError):
        return False


def find_sweep(ref: str) -> Path | None:
    """The sweep file `ref` names (a path, or a built-in sweep's name), or None when it names no sweep."""
    from testbed.specs.loader import resolve_spec_path

    for kind in ("scenarios", "sweeps"):
        try:
            path = resolve_spec_path(ref, kind)
        except (FileNotFoundError, SpecError):
            continue
        return path if is_sweep_file(path) else None
    return None


def load_sweep(path: Path | str, *, limit: int | None = None, user_modes: list[str] | None = None,
               agents: list[str] | None = None, user: str | None = None) -> ResolvedSweep:
    """Load and validate a sweep and everything it names, before any model is called.

    `limit`, `user_modes`, `agents` and `user` replace the file's own values (`user` its `users` too; agent refs
    given here resolve from the current folder or the built-ins, like command-line agents).
    """
    path = Path(path)
    data = read_yaml(path)
    if agents is not None:
        data = {**data, "agents": [_given(a) for a in agents]}
    if user is not None:
        data = {**{k: v for k, v in data.items() if k != "users"}, "user": _given(user)}
    own = {k: v for k, v in data.items() if k in SweepSpec.model_fields}
    try:
        spec = SweepSpec.model_validate(own)
    except ValidationError as exc:
        raise spec_error_from_validation(path, exc, SweepSpec) from None
    fields = {k: v for k, v in data.items() if k not in SweepSpec.model_fields}
    for name in SET_BY_SWEEP:
        if name in fields:
            raise SpecError(path, name, "a sweep sets each cell's assistant and dataset itself", "list them under agents: and datasets:")
    entry = KINDS.entry(spec.scenario)
    model = entry.spec
    _check_axes(path, spec, "dataset" in model.model_fields)
    if limit is not None:
        selection = entry.limit_field
        fields = {**fields, selection: {**(fields.get(selection) or {}), "limit": limit}}
    if user_modes is not None:
        fields = {**fields, "user_modes": list(user_modes)}
    agents_ = tuple(_agent(path, f"agents.{k}", ref) for k, ref in enumerate(spec.agents))
    names = [a.spec.name for a in agents_]
    if len(set(names)) != len(names):
        raise SpecError(path, "agents", f"two agents share a name ({', '.join(names)})", "give every agent spec its own `name:`")
    fixed_user = None if spec.user == SELF or spec.users else _agent(path, "user", spec.user)
    users = tuple(_agent(path, f"users.{k}", ref) for k, ref in enumerate(spec.users or []))
    if len({u.spec.name for u in users}) != len(users):
        raise SpecError(path, "users", "two users share a name", "give every agent spec its own `name:`")
    cells, user_prompt = [], None
    for agent in agents_:
        for user_agent in users or (fixed_user or agent,):
            for dataset in spec.datasets or [None]:
                given = {"dataset": dataset} if dataset is not None else {}
                try:
                    cell = model.model_validate({**fields, **given, "kind": spec.scenario, "name": spec.name,
                                                 "assistant": agent.spec.name, "user": user_agent.spec.name})
                except ValidationError as exc:
                    raise spec_error_from_validation(path, exc, model) from None
                if getattr(cell, "opening", "dataset") != "dataset":
                    raise SpecError(path, "opening", "a sweep varies the dataset, so its dialogues open with a dataset item",
                                    "drop opening: (or run a persona dialogue as its own scenario per agent)")
                if cells == [] and cell.user_prompt_file is not None:
                    user_prompt = read_text(named_path(path, cell.user_prompt_file), named_by=(path, "user_prompt_file"), what="prompt file")
                cells.append(_resolved(entry, path, cell, agent, user_agent, user_prompt))
    return ResolvedSweep(spec, cells[0].spec, path, agents_, fixed_user, user_prompt, tuple(cells), users)


def _check_axes(path: Path, spec: SweepSpec, has_dataset: bool) -> None:
    """`user` and `users` are one axis; `datasets` goes with a kind that has a dataset field, and only with one."""
    if spec.users and spec.user != SELF:
        raise SpecError(path, "users", "a sweep names one fixed user (`user:`) or several (`users:`), not both", "keep one of them")
    if has_dataset and spec.datasets is None:
        raise SpecError(path, "datasets", f"a {spec.scenario} sweep varies the dataset", "list them under datasets:")
    if not has_dataset and spec.datasets is not None:
        raise SpecError(path, "datasets", f"a {spec.scenario} scenario has no dataset field to vary",
                        "drop datasets: and set the scenario's own field (tau2: domain:)")


def _given(ref: str) -> str:
    return str(Path(ref).resolve()) if Path(ref).is_file() else ref


def _agent(path: Path, field: str, ref: str) -> ResolvedAgent:
    try:
        return load_agent(ref, relative_to=path.parent)
    except FileNotFoundError as exc:
        raise SpecError(path, field, str(exc), "point it at an agent spec file or a built-in agent name") from None


def _resolved(entry, path: Path, cell: BaseModel, assistant: ResolvedAgent, user: ResolvedAgent,
              user_prompt: str | None) -> ResolvedScenario:
    """One cell as a resolved scenario: the kind's own checks (its resolve hook) run as for a scenario file."""
    if "instructed" in cell.user_modes and user_prompt is None:
        raise SpecError(path, "user_prompt_file", "user mode `instructed` needs a role-play prompt",
                        "add user_prompt_file: prompts/user-instructed.md")
    extra = dict(entry.resolve(path, cell, user_prompt)) if entry.resolve is not None else {}
    return ResolvedScenario(cell, path, assistant, user, user_prompt, **extra)
