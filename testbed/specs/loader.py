"""Read spec files, resolve the files they name, and validate everything before any model call."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from testbed.specs.agent import AgentSpec
from testbed.specs.errors import SpecError, cut, spec_error_from_validation
from testbed.specs.files import builtin_dir, is_sweep, parse_yaml, read_text
from testbed.specs.conversation import DialogueScenarioSpec, InfoGatheringScenarioSpec, PersonaSet, PersonaSpec
from testbed.specs.registries import KINDS
from testbed.specs.scenario import ProbeScenarioSpec
from testbed.templates import CONVERSATION_SLOT

ScenarioSpec = ProbeScenarioSpec | DialogueScenarioSpec | InfoGatheringScenarioSpec
"""The built-in scenario spec models, for type hints; which model a spec uses is declared in KINDS."""

def resolve_spec_path(ref: str | Path, kind: str, *, relative_to: Path | None = None) -> Path:
    """Find a spec by path (as given, or next to the spec naming it) or by built-in name."""
    ref = Path(ref)
    candidates = [relative_to / ref] if relative_to is not None and not ref.is_absolute() else []
    candidates.append(ref)
    base = builtin_dir(kind)
    candidates += [base / ref, base / ref.name, base / f"{ref.name}.yaml"]
    for candidate in candidates:
        if _holds(candidate, Path.is_file):
            return candidate
    given = candidates[: 2 if relative_to is not None and not ref.is_absolute() else 1]
    folder = next((c for c in given if _holds(c, Path.is_dir)), None)
    if folder is not None:
        raise SpecError(folder, "(file)", f"is a directory, not a {kind[:-1]} spec file",
                        "name a YAML file inside it, or a built-in name")
    known = sorted(p.stem for p in base.glob("*.yaml")) if base.is_dir() else []
    raise FileNotFoundError(
        f"no {kind[:-1]} spec {cut(str(ref))}: give a path to a YAML file or a built-in name ({', '.join(known)})"
    )


def _holds(path: Path, test) -> bool:
    try:
        return test(path)
    except OSError:
        return False


def read_yaml(path: Path, *, named_by: tuple[Path, str] | None = None, what: str = "spec file") -> dict[str, Any]:
    """Read and parse a YAML mapping safely (see `testbed.specs.files`), naming the file and line when it is bad.

    `named_by` is the spec and field that name this file; read errors (missing, directory,
    not UTF-8) are reported there, errors in the YAML itself on this file.
    """
    data = parse_yaml(read_text(path, named_by=named_by, what=what), path)
    if not isinstance(data, dict):
        raise SpecError(path, "(top level)", "the file is not a YAML mapping", "write `key: value` lines")
    return data


def named_path(path: Path, value: Path) -> Path:
    """A file named in the spec at `path`: absolute, or relative to the spec's folder."""
    return value if value.is_absolute() else path.parent / value


def _prompt(path: Path, field: str, value: Path | None) -> str | None:
    if value is None:
        return None
    return read_text(named_path(path, value), named_by=(path, field), what="prompt file")


WHERE_SERVERS_LIVE = ("base_url", "base_urls", "api_key_env", "concurrency", "timeout_s", "max_retries", "max_reply_bytes")
"""Agent fields that say where its server is and how it is reached, not what it generates."""
WHERE_MANAGED_SERVERS_LIVE = ("port", "startup_timeout_s", "replicas", "gpu_memory_utilization", "tool_parser_plugin")
"""Fields of a managed server (`server:`) that say where it listens, how much of the machine it takes and where its
plugin file lives, not what the model generates (dtype, max_model_len, parallelism, the tool parser's name and extra
flags can change that, and stay)."""


def experiment_of(agent: dict[str, Any]) -> dict[str, Any]:
    """An agent as `ResolvedAgent.as_dict` gives it, less its file's path and where its server lives
    (WHERE_SERVERS_LIVE, WHERE_MANAGED_SERVERS_LIVE): what goes into the run id."""
    spec = {k: v for k, v in agent["spec"].items() if k not in WHERE_SERVERS_LIVE}
    if isinstance(spec.get("server"), dict):
        spec["server"] = {k: v for k, v in spec["server"].items() if k not in WHERE_MANAGED_SERVERS_LIVE}
    return {**{k: v for k, v in agent.items() if k != "path"}, "spec": spec}


def spec_hash(blob: dict[str, Any]) -> str:
    """The short hash a run id ends in: ten hex digits of the sha256 of the blob's sorted JSON."""
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class ResolvedAgent:
    """An agent spec with its prompt text read, and the file it came from."""

    spec: AgentSpec
    path: Path
    system_prompt: str | None
    legacy_ids: bool = False
    """Set on the agents of a run made before ids left out where servers live: `identity` then hashes as it did."""

    def as_dict(self) -> dict[str, Any]:
        """Everything that defines the agent, for the store."""
        return {"path": str(self.path), "spec": self.spec.model_dump(mode="json"), "system_prompt": self.system_prompt}

    def identity(self) -> dict[str, Any]:
        """The agent spec as episode and answer ids hash it: without where its server lives (`experiment_of`), so
        a run whose server moved finds its finished episodes; the whole spec for a run made before (`legacy_ids`)."""
        whole = self.as_dict()
        return whole["spec"] if self.legacy_ids else experiment_of(whole)["spec"]


def load_agent(ref: str | Path, *, relative_to: Path | None = None) -> ResolvedAgent:
    """Load and validate one agent spec."""
    path = resolve_spec_path(ref, "agents", relative_to=relative_to)
    try:
        spec = AgentSpec.model_validate(read_yaml(path))
    except ValidationError as exc:
        raise spec_error_from_validation(path, exc, AgentSpec) from None
    spec = spec.with_files_under(path.parent)
    plugin = spec.server.tool_parser_plugin
    if plugin is not None and not _holds(plugin, Path.is_file):
        raise SpecError(path, "server.tool_parser_plugin", f"{cut(str(plugin))} is not a file",
                        "give your vLLM tool-parser plugin's .py file, absolute or relative to this spec's folder")
    return ResolvedAgent(spec, path, _prompt(path, "system_prompt_file", spec.system_prompt_file))


@dataclass(frozen=True)
class ResolvedScenario:
    """A scenario with its agents and prompts resolved: everything a run needs, nothing implicit."""

    spec: ScenarioSpec
    path: Path
    assistant: ResolvedAgent
    user: ResolvedAgent
    user_prompt: str | None
    personas: tuple[PersonaSpec, ...] = ()
    task_set: Any = None

    def as_dict(self) -> dict[str, Any]:
        """The fully resolved spec, stored with the run."""
        out = {
            "scenario": self.spec.model_dump(mode="json"),
            "path": str(self.path),
            "assistant": self.assistant.as_dict(),
            "user": self.user.as_dict(),
            "user_prompt": self.user_prompt,
        }
        if self.personas:
            out["personas"] = [p.model_dump(mode="json") for p in self.personas]
        if self.task_set is not None:
            out["tasks"] = self.task_set.model_dump(mode="json")
        return out

    def fingerprint(self) -> str:
        """A short hash of what the experiment is (models, sampling, prompts, seeds, items), the end of the run id:
        where the servers live is left out (`experiment_of`), so a run whose server moved resumes."""
        blob = self.as_dict()
        for key in ("assistant", "user"):
            blob[key] = experiment_of(blob[key])
        blob.pop("path")
        return spec_hash(blob)

    def as_made_under(self, stored_fingerprint: str | None) -> "ResolvedScenario":
        """This scenario as the run stored with `stored_fingerprint` planned it: with the ids it had before ids left
        out where servers live when that run was made then (its fingerprint is the legacy one), else unchanged."""
        if stored_fingerprint in (None, self.fingerprint()) or stored_fingerprint != self.legacy_fingerprint():
            return self
        return self.with_legacy_ids()

    def with_legacy_ids(self) -> "ResolvedScenario":
        """The same scenario planning the episode and answer ids a run made before issue 36 has."""
        return replace(self, assistant=replace(self.assistant, legacy_ids=True), user=replace(self.user, legacy_ids=True))

    def legacy_fingerprint(self) -> str:
        """The hash run ids ended in before they left out where servers live (everything but file paths): a store's
        run made then is found under it and resumed (`Store.resumable_run_id`)."""
        blob = self.as_dict()
        for key in ("assistant", "user"):
            blob[key] = {k: v for k, v in blob[key].items() if k != "path"}
        blob.pop("path")
        return spec_hash(blob)


def load_scenario(
    ref: str | Path,
    *,
    assistant: str | Path | None = None,
    user: str | Path | None = None,
    limit: int | None = None,
    user_modes: list[str] | None = None,
) -> ResolvedScenario:
    """Load a scenario and its agents; command-line overrides replace the spec's own choices."""
    path = resolve_spec_path(ref, "scenarios")
    data = read_yaml(path)
    kind = data.get("kind")
    if is_sweep(data):
        raise SpecError(path, "kind", "this file is a sweep, which names its own agents", "run it with `testbed run FILE`, without --assistant/--user")
    if kind not in KINDS:
        raise SpecError(path, "kind", f"unknown scenario kind {cut(kind)}", f"use one of {', '.join(KINDS.names())} (or sweep)")
    entry = KINDS.entry(kind)
    model = entry.spec
    selection = entry.limit_field
    if limit is not None and isinstance(data.get(selection) or {}, dict):
        data = {**data, selection: {**(data.get(selection) or {}), "limit": limit}}
    if user_modes is not None:
        data = {**data, "user_modes": list(user_modes)}
    try:
        spec = model.model_validate(data)
    except ValidationError as exc:
        raise spec_error_from_validation(path, exc, model) from None
    agents = {}
    for role, override in (("assistant", assistant), ("user", user)):
        ref_ = override if override is not None else getattr(spec, role)
        try:
            agents[role] = load_agent(ref_, relative_to=None if override is not None else path.parent)
        except FileNotFoundError as exc:
            raise SpecError(path, role, str(exc), "point it at an agent spec file") from None
    user_prompt = _prompt(path, "user_prompt_file", spec.user_prompt_file)
    if "instructed" in spec.user_modes and user_prompt is None:
        raise SpecError(path, "user_prompt_file", "user mode `instructed` needs a role-play prompt", "add user_prompt_file: prompts/user-instructed.md")
    extra = dict(entry.resolve(path, spec, user_prompt)) if entry.resolve is not None else {}
    return ResolvedScenario(spec, path, agents["assistant"], agents["user"], user_prompt, **extra)


def check_conversation_slot(path: Path, spec: ProbeScenarioSpec, user_prompt: str | None) -> dict[str, Any]:
    """The probe's resolve hook: an instructed user prompt must hold the `{conversation}` slot.

    The probe fills the conversation so far into that slot; without it the simulated user would
    never see the answer it is meant to react to. The probe reads no extra files.
    """
    if "instructed" in spec.user_modes and user_prompt is not None and CONVERSATION_SLOT not in user_prompt:
        raise SpecError(path, "user_prompt_file", f"the instructed user prompt lacks the slot {CONVERSATION_SLOT}",
                        f"add {CONVERSATION_SLOT} where the conversation so far should appear")
    return {}


def read_personas(path: Path, spec: DialogueScenarioSpec, user_prompt: str | None) -> dict[str, Any]:
    """The dialogue's resolve hook: the personas of `personas_file`, when the dialogue opens by persona.

    Read at load time, so a bad personas file fails before any model call and the personas are
    stored with the run (they change what it generates).
    """
    if spec.opening != "persona":
        return {}
    assert spec.personas_file is not None
    target = named_path(path, spec.personas_file)
    try:
        data = read_yaml(target, named_by=(path, "personas_file"), what="personas file")
        return {"personas": tuple(PersonaSet.model_validate(data).personas)}
    except ValidationError as exc:
        raise spec_error_from_validation(target, exc, PersonaSet) from None
