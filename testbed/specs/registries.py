"""The testbed's extension points: a typed entry for each kind of plug-in and the registry that holds them.

Each scenario kind, backend, judge kind, framework, report and figure declares one entry object beside its code
(`KIND = ScenarioKindEntry(name="probe", ...)` at the end of `testbed/scenarios/probe.py`), with
plain references to what it implements. The registries here hold only names and the import path
of each entry; the names are registered in `testbed/entries.py`, at the top of the package, so no
module names one above it. Nothing is imported until an entry is first read (`KINDS.entry(name)`),
so the spec layer validates names without importing any implementation.

A new kind is its module with its entry plus one `register` line; a test registers a fake the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any

from testbed.registry import Registry, import_path
from testbed.specs.kind_views import NO_VIEWS, KindViews


@dataclass(frozen=True)
class ScenarioKindEntry:
    """A scenario kind: its spec model, how it plans and runs, and which report shows its runs.

    `runner` is the kind class (`plan(scenario)`, `runner(context)`; testbed.scenarios.base.ScenarioKind);
    `limit_field` the selection `--limit` sets; `resolve` a hook `(path, spec, user_prompt) -> {field: value}`
    that reads the kind's extra files into ResolvedScenario (or None); `report` the name of the
    report entry (REPORTS) that builds this kind's report; `sweepable` True when a sweep can vary its
    assistant, user and dataset (a kind whose episodes open with a dataset item, or τ², whose `dataset` names the domain);
    `views` the name of its views entry (VIEWS, testbed.specs.kind_views: its compare columns, replay marks and
    per-turn fault detector; registered like its report, since they build on analysis, above the kind), None for a
    kind that shows only what every kind shows;
    `scripted_user` True when its episodes can seat the scripted τ² user (testbed.scenarios.tau2.scripted_user), which
    the simulator gap measures a model user against.
    """

    name: str
    spec: type
    runner: type
    report: str
    limit_field: str = "items"
    resolve: Callable[..., Mapping[str, Any] | None] | None = None
    sweepable: bool = False
    views: str | None = None
    scripted_user: bool = False


@dataclass(frozen=True)
class BackendEntry:
    """A backend: its async builder `(AgentSpec, BackendPool) -> Backend` and what it declares.

    `capabilities` what it can do unless the spec declares otherwise; `declarable` the capabilities an
    agent spec's `capabilities:` block may set (the rest are fixed); `requires` field → the fix shown
    when the spec lacks it; `managed` True when, without `base_url`, the testbed starts the server
    itself; `replicas` True when requests can be spread over several servers of one model;
    `needs_model` False when the spec may leave `model` out (it then defaults to the agent's name);
    `own_fields` the spec fields only this backend reads (refused with any other); `check` a hook
    `(AgentSpec) -> (field, problem, fix) | None` run before any server starts (an agent that cannot be imported);
    `scripted_user` True for the scripted τ² user, which only a kind whose entry seats it may name (as its user).
    """

    name: str
    build: Callable[..., Any]
    capabilities: Mapping[str, bool]
    declarable: tuple[str, ...] = ()
    requires: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    managed: bool = False
    replicas: bool = False
    needs_model: bool = True
    own_fields: tuple[str, ...] = ()
    check: Callable[..., Any] | None = None
    scripted_user: bool = False


@dataclass(frozen=True)
class JudgeKindEntry:
    """A judge kind: its builder `(ResolvedJudge, backend=None) -> Judge` (testbed.judges.base).

    `prompted` True when the judge reads a prompt file and binds an agent, so the `requires` fields
    must be in its spec; `article` the word before the kind in messages.
    """

    name: str
    build: Callable[..., Any]
    prompted: bool = False
    requires: tuple[str, ...] = ()
    article: str = "a"


@dataclass(frozen=True)
class FrameworkEntry:
    """A framework: who runs the turn loop (testbed.frameworks), and what it can run.

    `framework` the framework class's import path (`module:Class`): an agent framework's module imports
    its optional package at the top, so its facts must be readable without importing it (see `load`);
    `kinds`, `user_modes`, `backends` what it can run (None: anything);
    `modules` what must be importable for it, from the optional `extra`. `owns_client` True when the
    framework builds its own model client: its requests then pass the testbed's wire proxy, which
    retries them and keeps the wire log, its loggers go to the run's log file, it sends to one URL,
    its run ids carry its name, and a sweep (which runs the testbed's own loop) cannot use it.
    `baseline` marks the framework `compare` pairs every other one with.
    """

    name: str
    framework: str
    kinds: tuple[str, ...] | None = None
    user_modes: tuple[str, ...] | None = None
    backends: tuple[str, ...] | None = None
    modules: tuple[str, ...] = ()
    extra: str | None = None
    owns_client: bool = True
    baseline: bool = False

    def load(self) -> type:
        """The framework class, importing its module (and the framework's package) now."""
        return import_path(self.framework)


@dataclass(frozen=True)
class ReportEntry:
    """A report: `build(run) -> DataFrame` from the run's `RunFrames` under its judge, one row per condition group.

    A scenario kind names the report its runs get (ScenarioKindEntry.report); several kinds can share one.
    `options` names the keyword arguments `build` also takes (`errored_as` for reports with rewards), so a command
    can refuse an option the run's report does not read instead of ignoring it.
    """

    name: str
    build: Callable[..., Any]
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class FigureEntry:
    """A `testbed plot` figure: `name` the stem of its PNG and CSV, `title` the head of its title, `build` its numbers
    `(FigureInputs) -> (frame, skip reason)` (testbed.analysis.figures.registry), `draw` the import path of the
    function `(FigureData, path) -> None` that draws it, so building the numbers never imports matplotlib;
    `needs_labels` False for a figure drawn without a judge's labels (it is skipped only by its own reason).

    Declared beside its builder; the figures are built, written and listed in the order they are registered.
    """

    name: str
    title: str
    build: Callable[..., Any]
    draw: str
    needs_labels: bool = True

    def drawing(self) -> Callable[..., Any]:
        """The drawing function, imported on first use (it needs matplotlib)."""
        return import_path(self.draw)


KINDS: Registry[ScenarioKindEntry] = Registry("scenario kind", ScenarioKindEntry)
"""Scenario kinds, by the `kind:` a scenario spec names."""
BACKENDS: Registry[BackendEntry] = Registry("backend", BackendEntry)
"""Backends, by the `backend:` an agent spec names."""
JUDGE_KINDS: Registry[JudgeKindEntry] = Registry("judge kind", JudgeKindEntry)
"""Judge kinds, by the `kind:` a judge spec names."""
FRAMEWORKS: Registry[FrameworkEntry] = Registry("framework", FrameworkEntry)
"""Frameworks, by the name `--framework` takes."""
REPORTS: Registry[ReportEntry] = Registry("report", ReportEntry)
"""Reports, by the name a scenario kind's entry gives."""
FIGURES: Registry[FigureEntry] = Registry("figure", FigureEntry)
"""`testbed plot`'s figures, in the order they are built, written and listed."""
VIEWS: Registry[KindViews] = Registry("kind views", KindViews)
"""Scenario kinds' views, by the name a kind's entry gives (`kind_views` reads them)."""


def kind_views(kind: str | None) -> KindViews:
    """The views of the scenario kind named `kind` (imported on first use), `NO_VIEWS` for a kind that names none, an
    unregistered kind or None: callers ask for a run's views without asking which kind it is."""
    if kind is None or kind not in KINDS or KINDS.entry(kind).views is None:
        return NO_VIEWS
    return VIEWS.entry(KINDS.entry(kind).views)


def default_framework() -> str:
    """The name of the baseline framework (FrameworkEntry.baseline): who runs a scenario's turn loops unless told
    otherwise, and the one `compare` pairs every other framework with.

    The baseline is registered first (testbed/entries.py; a house test checks its entry says `baseline`), so this
    reads only the names: a CLI option's default costs no import of the frameworks.
    """
    names = FRAMEWORKS.names()
    if not names:
        raise LookupError("no framework is registered: testbed/entries.py registers the baseline framework first")
    return names[0]


def registered(registry: Registry, accepts: Callable[[Any], bool] | None = None) -> Any:
    """A `str` field type that accepts exactly the registry's names (those whose entry `accepts`) at validation time.

    Like a `Literal` of the names (same error type and message, so spec errors read as before),
    but checked against the registry when a spec is validated, so an entry registered later
    (a plug-in, a test's fake) is accepted without redefining the spec model.
    """
    from pydantic import BeforeValidator
    from pydantic_core import PydanticCustomError

    def check(value: object) -> object:
        names = [n for n in registry.names() if accepts is None or accepts(registry.entry(n))]
        if value not in names:
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": registry.one_of(names)})
        return value

    return Annotated[str, BeforeValidator(check)]
