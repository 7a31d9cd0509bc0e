"""Sweep specs: one probe over many models × datasets × temperatures × perturbations × samples.

A sweep expands into *cells*, one probe scenario per assistant agent × dataset, all written into
one run: episode ids are stable as in any probe, so a rerun resumes the run and every answer is
shared by the user-turn variants of its item. `user: self` makes each agent its own simulated
user; naming an agent instead makes that one model the user facing every assistant.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from testbed.specs.errors import SpecError, spec_error_from_validation
from testbed.specs.loader import ResolvedAgent, ResolvedScenario, check_conversation_slot, load_agent, read_yaml, named_path
from testbed.specs.files import read_text
from testbed.specs.scenario import ProbeConditions, ProbeScenarioSpec, known_dataset

SELF = "self"


class SweepSpec(ProbeConditions):
    """A sweep: every agent in `agents` answers every dataset's items; the probe's conditions vary within.

    `agents` and `user` name agent specs (a path relative to this file, or a built-in name);
    `user: self` (the default) lets each agent play its own simulated user.
    """

    kind: Literal["sweep"]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    agents: list[str] = Field(min_length=1)
    user: str = SELF
    datasets: list[str] = Field(min_length=1)

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("datasets repeat | fix: list each dataset once")
        return [known_dataset(v) for v in value]

    @field_validator("agents")
    @classmethod
    def _agents(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("agents repeat | fix: list each agent once")
        return value


@dataclass(frozen=True)
class ResolvedSweep:
    """A sweep with its agents and prompt resolved, and the probe scenarios (cells) it expands into."""

    spec: SweepSpec
    path: Path
    agents: tuple[ResolvedAgent, ...]
    user: ResolvedAgent | None
    """The fixed simulated user, or None when each agent plays its own."""
    user_prompt: str | None
    cells: tuple[ResolvedScenario, ...]

    def as_dict(self) -> dict[str, Any]:
        """The fully resolved sweep, stored with the run."""
        return {
            "sweep": self.spec.model_dump(mode="json"),
            "path": str(self.path),
            "agents": [a.as_dict() for a in self.agents],
            "user": self.user.as_dict() if self.user else SELF,
            "user_prompt": self.user_prompt,
            "cells": [{"assistant": c.assistant.spec.name, "user": c.user.spec.name, "dataset": c.spec.dataset} for c in self.cells],
        }

    def fingerprint(self) -> str:
        """A short hash of everything that changes what the sweep generates (agent file paths excluded)."""
        blob = self.as_dict()
        blob.pop("path")
        blob["agents"] = [{k: v for k, v in a.items() if k != "path"} for a in blob["agents"]]
        if isinstance(blob["user"], dict):
            blob["user"] = {k: v for k, v in blob["user"].items() if k != "path"}
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:10]


def is_sweep_file(path: Path) -> bool:
    """True when the YAML file at `path` declares `kind: sweep` (any read problem: False, left to the loader)."""
    try:
        return read_yaml(path).get("kind") == "sweep"
    except (SpecError, OSError):
        return False


def load_sweep(path: Path | str, *, limit: int | None = None, user_modes: list[str] | None = None,
               agents: list[str] | None = None, user: str | None = None) -> ResolvedSweep:
    """Load and validate a sweep and everything it names, before any model is called.

    `limit`, `user_modes`, `agents` and `user` replace the file's own values (agent refs given
    here resolve from the current folder or the built-ins, like command-line agents).
    """
    path = Path(path)
    data = read_yaml(path)
    if agents is not None:
        data = {**data, "agents": [str(Path(a).resolve()) if Path(a).is_file() else a for a in agents]}
    if user is not None:
        data = {**data, "user": str(Path(user).resolve()) if Path(user).is_file() else user}
    if limit is not None:
        data = {**data, "items": {**(data.get("items") or {}), "limit": limit}}
    if user_modes is not None:
        data = {**data, "user_modes": list(user_modes)}
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise spec_error_from_validation(path, exc, SweepSpec) from None
    agents = tuple(_agent(path, f"agents.{k}", ref) for k, ref in enumerate(spec.agents))
    names = [a.spec.name for a in agents]
    if len(set(names)) != len(names):
        raise SpecError(path, "agents", f"two agents share a name ({', '.join(names)})", "give every agent spec its own `name:`")
    user = None if spec.user == SELF else _agent(path, "user", spec.user)
    user_prompt = None
    if spec.user_prompt_file is not None:
        user_prompt = read_text(named_path(path, spec.user_prompt_file), named_by=(path, "user_prompt_file"), what="prompt file")
    if "instructed" in spec.user_modes and user_prompt is None:
        raise SpecError(path, "user_prompt_file", "user mode `instructed` needs a role-play prompt",
                        "add user_prompt_file: prompts/user-instructed.md")
    check_conversation_slot(path, spec, user_prompt)
    cells = tuple(_cell(spec, path, agent, user or agent, user_prompt, dataset) for agent in agents for dataset in spec.datasets)
    return ResolvedSweep(spec, path, agents, user, user_prompt, cells)


def _agent(path: Path, field: str, ref: str) -> ResolvedAgent:
    try:
        return load_agent(ref, relative_to=path.parent)
    except FileNotFoundError as exc:
        raise SpecError(path, field, str(exc), "point it at an agent spec file or a built-in agent name") from None


def _cell(spec: SweepSpec, path: Path, assistant: ResolvedAgent, user: ResolvedAgent, user_prompt: str | None,
          dataset: str) -> ResolvedScenario:
    """The probe scenario of one assistant × dataset; it keeps the sweep's name, so its episode ids are the sweep's."""
    conditions = spec.model_dump(include=set(ProbeConditions.model_fields))
    probe = ProbeScenarioSpec.model_validate({**conditions, "kind": "probe", "name": spec.name, "dataset": dataset,
                                              "assistant": assistant.spec.name, "user": user.spec.name})
    return ResolvedScenario(probe, path, assistant, user, user_prompt)


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
