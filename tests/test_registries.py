"""Scenario kinds, backends, judge kinds, frameworks and reports are typed registries: every entry resolves
to its declared type, unknown names list the known ones, and a new entry registered here works end to end
without touching any other module."""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Literal

import pandas as pd
import pytest
from pydantic import ValidationError

from helpers import write_yaml
from testbed.backends.base import Capabilities, GenerateRequest
from testbed.backends.factory import BackendPool, capabilities_of
from testbed.registry import Ref, Registry, UnknownName
from testbed.running.runner import plan, run_scenario, scenario_kind
from testbed.scenarios.base import EpisodeVariant, emit, variant
from testbed.specs.agent import AgentSpec, CapabilitiesSpec, Strict
from testbed.specs.conversation import PersonaSpec
from testbed.specs.errors import SpecError, spec_error_from_validation
from testbed.specs.loader import ResolvedScenario, load_scenario
from testbed.specs.registries import (BACKENDS, FRAMEWORKS, JUDGE_KINDS, KINDS, REPORTS, BackendEntry, FrameworkEntry,
                                      ReportEntry, ScenarioKindEntry)
from testbed.specs.scenario import ItemSelection
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.store.labels import JudgeIdentity
from testbed.transcript import Message


def test_every_scenario_kind_resolves():
    for name in KINDS.names():
        entry = KINDS.entry(name)
        kind = entry.runner()
        assert callable(kind.plan) and callable(kind.runner), name
        assert entry.spec.model_fields["kind"].annotation == Literal[name]
        assert entry.limit_field in entry.spec.model_fields
        assert callable(entry.resolve) and entry.report in REPORTS and callable(REPORTS.entry(entry.report).build)
    assert KINDS.names() == ("probe", "dialogue", "info_gathering", "tau2")
    assert [n for n in KINDS.names() if KINDS.entry(n).sweepable] == ["probe", "dialogue", "tau2"]


def test_every_backend_resolves_with_its_declared_facts():
    for name in BACKENDS.names():
        entry = BACKENDS.entry(name)
        assert inspect.iscoroutinefunction(entry.build), name
        assert set(entry.capabilities) == set(Capabilities.__dataclass_fields__)
        assert set(entry.declarable) <= set(CapabilitiesSpec.model_fields)
        assert set(entry.requires) <= set(AgentSpec.model_fields)
    assert BACKENDS.names() == ("vllm", "openai", "litellm", "scripted", "python", "http-agent", "tau2-scripted")


def test_every_framework_declares_what_it_can_run_without_importing_its_package():
    import subprocess
    import sys

    assert FRAMEWORKS.names() == ("native", "autogen", "langgraph", "camel", "tau2")
    assert [n for n in FRAMEWORKS.names() if FRAMEWORKS.entry(n).baseline] == ["native"]
    assert [n for n in FRAMEWORKS.names() if not FRAMEWORKS.entry(n).owns_client] == ["native"]
    code = ("import sys; from testbed.specs.registries import FRAMEWORKS;"
            "[FRAMEWORKS.entry(n).kinds for n in FRAMEWORKS.names()];"
            "print(sorted(m for m in ('autogen_agentchat', 'langgraph', 'camel', 'langchain_openai', 'tau2', 'litellm') if m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    for name in FRAMEWORKS.names():
        assert FRAMEWORKS.entry(name).framework.rpartition(":")[2].endswith("Framework")


def test_a_registration_of_the_wrong_type_or_name_fails_where_it_is_read():
    reg = Registry("widget", BackendEntry)
    reg.register("w", "testbed.frameworks.catalogue:NATIVE")
    with pytest.raises(TypeError, match="is a FrameworkEntry, not a BackendEntry"):
        reg.entry("w")
    other = Registry("framework", FrameworkEntry)
    other.register("mine", "testbed.frameworks.catalogue:NATIVE")
    with pytest.raises(TypeError, match="declares framework 'native' but is registered as 'mine'"):
        other.entry("mine")


def test_declared_capabilities_are_as_before():
    def caps(backend: str, **extra) -> Capabilities:
        return capabilities_of(AgentSpec(name="a", backend=backend, model="m", **extra))

    both, none = Capabilities(True, True), Capabilities()
    declared = {"capabilities": {"continue_user_turn": True, "structured_output": True}}
    assert caps("vllm") == caps("vllm", **declared) == both
    assert caps("scripted", outputs=[]) == both
    assert caps("openai", base_url="http://h/v1") == none
    assert caps("openai", base_url="http://h/v1", **declared) == both
    assert caps("litellm") == Capabilities(False, True)
    assert caps("litellm", capabilities={"continue_user_turn": True, "structured_output": False}) == Capabilities(False, False)
    assert AgentSpec(name="a", backend="vllm", model="m").managed
    assert not AgentSpec(name="a", backend="vllm", model="m", base_url="http://h/v1").managed
    assert not AgentSpec(name="a", backend="litellm", model="m").managed


def test_every_judge_kind_resolves_and_keeps_its_label_identity():
    from testbed.judges.base import Judge, make_judge
    from testbed.judges.runner import identity_of
    from testbed.judges.specs import load_judge

    assert JUDGE_KINDS.names() == ("local", "llm", "learned")
    local, followup = make_judge(load_judge("local")), make_judge(load_judge("followup"))
    assert isinstance(local, Judge) and isinstance(followup, Judge)
    assert local.identity == identity_of(load_judge("local")) == JudgeIdentity("local", "local-3")
    assert followup.identity == JudgeIdentity("followup", "followup-3", "smollm2-135m-instruct")
    learned = make_judge(load_judge("learned"))
    assert isinstance(learned, Judge) and learned.identity.judge == "learned" and learned.identity.version.startswith("learned-6+") and "~learned-3+" in learned.identity.version
    modes = make_judge(load_judge("failure-modes")).identity
    assert modes == JudgeIdentity("failure-modes", "failure-modes-3", "smollm2-135m-instruct")
    assert local.commit_every == 2000 and followup.commit_every == 1


async def test_the_local_judge_through_the_interface_equals_its_sync_form():
    from testbed.judges.base import make_judge
    from testbed.judges.local import LocalJudge
    from testbed.judges.specs import load_judge
    from testbed.judges.verdict import JudgeInput

    items = [JudgeInput(str(i), "What is 2+2?", "It is 4.", text) for i, text in enumerate(["Why 4?", "Thanks!", ""])]
    seen = []
    results = await make_judge(load_judge("local")).judge_all(items, lambda i, v, n: seen.append(i))
    assert [v for v, _ in results] == LocalJudge().judge_many(items) and seen == [0, 1, 2]


def test_unknown_names_list_the_known_ones(tmp_path):
    with pytest.raises(UnknownName, match="unknown backend 'nope': use one of vllm, openai, litellm, scripted"):
        BACKENDS.get("nope")
    with pytest.raises(UnknownName, match="use one of probe, dialogue, info_gathering"):
        scenario_kind(SimpleNamespace(spec=SimpleNamespace(kind="nope")))
    with pytest.raises(UnknownName, match="unknown judge kind"):
        JUDGE_KINDS.entry(["not", "a", "name"])
    path = write_yaml(tmp_path / "s.yaml", {"kind": "nope", "name": "x"})
    with pytest.raises(SpecError, match="unknown scenario kind 'nope'. Fix: use one of probe, dialogue, info_gathering"):
        load_scenario(path)
    with pytest.raises(ValidationError) as info:
        AgentSpec.model_validate({"name": "a", "backend": "nope", "model": "m"})
    message = str(spec_error_from_validation("a.yaml", info.value, AgentSpec))
    assert "Input should be 'vllm', 'openai', 'litellm', 'scripted', 'python', 'http-agent' or 'tau2-scripted' (got 'nope')" in message


def test_a_registry_imports_nothing_until_an_entry_is_used():
    reg = Registry("widget")
    entry = reg.register("w", "no_such_module_for_testbed:thing", hook=Ref("also_absent_module:hook"), size=3)
    assert "w" in reg and reg.names() == ("w",) and entry["size"] == 3 and entry.resolve("size") == 3
    with pytest.raises(ModuleNotFoundError):
        entry.load()
    with pytest.raises(ModuleNotFoundError):
        entry.resolve("hook")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("w", "x:y")
    with pytest.raises(ValueError, match="not an import path"):
        reg.register("v", "no_colon")
    assert reg.register("ok", "testbed.registry:Registry").load() is Registry
    reg.unregister("w")
    assert reg.names() == ("ok",)


async def build_echo(spec: AgentSpec, pool: BackendPool):
    """A scripted-like backend under a new name: echoes the last message, prefixed by the spec's first output."""
    from testbed.backends.scripted import ScriptedBackend

    return ScriptedBackend(lambda r: f"{spec.outputs[0]} {r.messages[-1]['content']}", name=spec.name, model=spec.model,
                           capabilities=capabilities_of(spec))


ECHO = BackendEntry("echo", build_echo, capabilities={"continue_user_turn": False, "structured_output": True},
                    declarable=("structured_output",), requires={"outputs": "add outputs: [prefix]"})
"""The echo backend's entry, declared beside its builder as a real backend's is."""


@pytest.fixture
def echo_backend():
    BACKENDS.register("echo", f"{__name__}:ECHO")
    yield
    BACKENDS.unregister("echo")


async def test_a_backend_registered_by_a_test_builds_and_reports_its_capabilities(echo_backend):
    with pytest.raises(ValidationError) as info:
        AgentSpec.model_validate({"name": "e", "backend": "echo", "model": "m"})
    assert str(spec_error_from_validation("e.yaml", info.value, AgentSpec)).endswith(
        "field `outputs`: backend `echo` needs outputs. Fix: add outputs: [prefix]")
    spec = AgentSpec.model_validate({"name": "e", "backend": "echo", "model": "m", "outputs": ["echo:"],
                                     "capabilities": {"continue_user_turn": True, "structured_output": False}})
    assert not spec.managed and capabilities_of(spec) == Capabilities(False, False), "only structured output is declarable"
    async with BackendPool() as pool:
        backend = await pool.backend_for(spec)
        completion = await backend.generate(GenerateRequest([{"role": "user", "content": "hi"}]))
    assert completion.text == "echo: hi" and backend.capabilities == Capabilities(False, False)


class SingleSpec(Strict):
    """A trivial scenario kind's spec: one assistant answer per item, nothing else."""

    kind: Literal["single"]
    name: str
    assistant: str
    user: str
    user_modes: list[Literal["raw", "instructed"]] = ["raw"]
    user_prompt_file: None = None
    items: ItemSelection = ItemSelection()
    prompt: str = "Say something."


def resolve_single(path, spec: SingleSpec, user_prompt):
    """The trivial kind's resolve hook: it reads no files but says it ran, through a ResolvedScenario field."""
    return {"personas": (PersonaSpec(id="hook", name="Hook", persona="a test", goal="show the hook ran", opening="hi"),)}


def single_report(run) -> pd.DataFrame:
    """The trivial kind's report: the episode count of its RunFrames, so a test sees that its own report ran."""
    return pd.DataFrame([{"kind": "single", "episodes": len(run.episodes)}])


class SingleKind:
    """A trivial kind: `items.limit` units (default 1), one episode each."""

    def plan(self, scenario: ResolvedScenario) -> list[tuple[int, list[EpisodeVariant]]]:
        """Unit i has one variant whose id hashes the spec's name and i."""
        a, u = scenario.assistant.spec, scenario.user.spec

        def key(i: int):
            return lambda eid: EpisodeKey(eid, str(i), "none", a.name, a.model, u.name, u.model, "raw", 0.0, 0, "none")

        return [(i, [variant((scenario.spec.name, i), key(i))]) for i in range(scenario.spec.items.limit or 1)]

    def runner(self, context):
        """A runner that asks the assistant once per variant and stores the answer."""

        class Runner:
            async def run(self, unit: int, variants: list[EpisodeVariant]) -> None:
                for v in variants:
                    request = GenerateRequest([{"role": "user", "content": context.scenario.spec.prompt}])
                    completion = await context.backends["assistant"].generate(request)
                    message = Message("assistant", completion.text, "assistant", 0)
                    await emit(context.sink, EpisodeOutcome(v.key, [message], "done", termination="answered"))

        return Runner()


SINGLE = ScenarioKindEntry("single", SingleSpec, SingleKind, report="single", limit_field="items", resolve=resolve_single)
"""The trivial kind's entry, declared beside its code as a real kind's is."""
SINGLE_REPORT = ReportEntry("single", single_report)
"""Its report's entry."""


@pytest.fixture
def single_kind():
    KINDS.register("single", f"{__name__}:SINGLE")
    REPORTS.register("single", f"{__name__}:SINGLE_REPORT")
    yield
    KINDS.unregister("single")
    REPORTS.unregister("single")


async def test_a_kind_registered_by_a_test_loads_plans_runs_and_reports(single_kind, spec_dir, store, tmp_path):
    from testbed.analysis.reports.probe import report_frame
    from testbed.backends.scripted import ScriptedBackend

    spec_dir()
    path = write_yaml(tmp_path / "single.yaml", {"kind": "single", "name": "single-test", "assistant": "scripted.yaml",
                                                 "user": "scripted.yaml", "items": {"limit": 5}})
    scenario = load_scenario(path, limit=2)
    assert scenario.spec.items.limit == 2, "--limit sets the kind's declared field"
    assert [p.id for p in scenario.personas] == ["hook"], "the kind's resolve hook filled the scenario"
    planned = plan(scenario)
    assert [unit for unit, _ in planned] == [0, 1] and all(len(vs) == 1 for _, vs in planned)
    summary = await run_scenario(scenario, store, backends={"assistant": ScriptedBackend(lambda r: "hello"),
                                                            "user": ScriptedBackend(lambda r: "")}, show_progress=False)
    assert (summary.done, summary.status) == (2, "done")
    assert report_frame(store, summary.run_id).to_dict("records") == [{"kind": "single", "episodes": 2}]
    with pytest.raises(SpecError, match="unknown field"):
        load_scenario(write_yaml(tmp_path / "bad.yaml", {"kind": "single", "name": "b", "assistant": "a", "user": "u", "x": 1}))


def test_the_registries_are_the_spec_layers_only_view_of_implementations():
    import subprocess
    import sys

    code = ("import sys; import testbed.specs.loader, testbed.specs.agent, testbed.judges.specs;"
            "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('testbed.')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "scenarios" not in out and "backends" not in out and "analysis" not in out, out
