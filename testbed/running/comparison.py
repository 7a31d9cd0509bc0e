"""One scenario under several frameworks: a run and a judging per framework, then the comparison.

`testbed compare` is this module with options and printing around it; a notebook calls `compare`
(or `await run_comparison(...)` inside a running event loop) and gets the same runs, labels and
table. Runs are resumable: each framework's run id depends only on the scenario and the framework,
so a second comparison finishes what the first left and labels only what is new.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console

from testbed.backends.base import BackendError
from testbed.frameworks.base import frameworks_for, supported_modes
from testbed.judges.runner import JudgeSummary, judge_run
from testbed.judges.specs import ResolvedJudge, load_judge
from testbed.running.runner import RunSummary, preflight, run_scenario
from testbed.running.user_faults import store_judged_faults
from testbed.specs.loader import ResolvedAgent, ResolvedScenario, load_agent, load_scenario
from testbed.specs.registries import FRAMEWORKS, default_framework, kind_views
from testbed.store import JudgeIdentity, Store
from testbed.store.labels import DEFAULT_JUDGE, default_identity
from testbed.store.run_frames import RunFrames

class FrameworkFailed(BackendError):
    """A framework's run, or the judging of it, failed for good: `framework` names which, `reason` is the backend's.

    A BackendError still, so code that catches those keeps working; the runs finished before it are in the store.
    """

    def __init__(self, framework: str, error: BackendError):
        super().__init__(error.reason, retryable=error.retryable)
        self.framework = framework


@dataclass(frozen=True)
class FrameworkRun:
    """One framework's part of a comparison: how its run ended and what the judge labelled in it."""

    framework: str
    summary: RunSummary
    labelled: JudgeSummary


@dataclass(frozen=True, eq=False)
class Comparison:
    """The frameworks side by side: one row per framework in `frame` (testbed.analysis.reports.compare),
    and how each one's simulated user sent the same request (`shapes`, for `episode`; testbed.analysis.wire_shape)."""

    scenario: str
    runs: list[FrameworkRun]
    frame: pd.DataFrame
    episode: str | None
    shapes: list[dict] = field(default_factory=list)
    labellers: dict[str, JudgeIdentity] = field(default_factory=dict)
    """Framework → whose labels its row shows (`shown_identity`)."""
    baselines: dict[str, str] = field(default_factory=dict)
    """Row → the run of its assistant with the scripted τ² user under the native loop (`simulator_gap`), whose reward
    its simulator-gap columns are measured against."""
    frames: dict[str, RunFrames] = field(default_factory=dict)
    """Framework → its run's frames under the labeller its row shows, as the comparison read them: what the tables
    printed beside it read (`testbed.analysis.frames.shared_reads(*frames.values())`), so no run is read twice."""

    @property
    def run_ids(self) -> dict[str, str]:
        """Framework → its run id, in the order compared."""
        return {r.framework: r.summary.run_id for r in self.runs}

    @property
    def identities(self) -> dict[str, JudgeIdentity | None]:
        """Framework → the identity whose labels its row shows (the judge's version every other face shows)."""
        return {r.framework: self.labellers.get(r.framework, r.labelled.identity) for r in self.runs}

    @property
    def incomplete(self) -> list[str]:
        """The frameworks whose run did not finish every planned episode."""
        return [r.framework for r in self.runs if r.summary.status != "done"]


def common_user_modes(scenario: ResolvedScenario, frameworks: Sequence[str]) -> list[str]:
    """The scenario's user modes that every framework named can run, in the scenario's order."""
    return [m for m in scenario.spec.user_modes if all(m in supported_modes(n, [m]) for n in frameworks)]


def load_comparable(spec: str | Path, frameworks: Sequence[str], *, assistant: str | Path | None = None,
                    user: str | Path | None = None, limit: int | None = None,
                    user_modes: list[str] | None = None) -> tuple[ResolvedScenario, list[str]]:
    """The scenario as every framework can run it, and the user modes left out for that.

    Without `user_modes`, a mode some framework cannot run (the raw user, for every framework but
    native) is dropped, so the comparison runs what all of them share; named `user_modes` are kept
    as given (and a framework that cannot run one is refused by `preflight`). Nothing is dropped
    when no mode is shared: preflight then says why.
    """
    scenario = load_scenario(spec, assistant=assistant, user=user, limit=limit, user_modes=user_modes)
    common = common_user_modes(scenario, frameworks)
    if user_modes is not None or not common or common == list(scenario.spec.user_modes):
        return scenario, []
    left_out = [m for m in scenario.spec.user_modes if m not in common]
    return load_scenario(spec, assistant=assistant, user=user, limit=limit, user_modes=common), left_out


def preflight_frameworks(scenario: ResolvedScenario, frameworks: Sequence[str], agents: Sequence[ResolvedAgent] = ()) -> None:
    """Refuse, before any run starts, a framework that cannot run the scenario, or an agent that cannot be used
    (testbed.running.runner.preflight)."""
    for name in frameworks:
        preflight(scenario, name)
    for agent in agents:
        preflight(with_agent(scenario, agent))


def agent_label(agent: ResolvedAgent) -> str:
    """The row of your own agent in a comparison: `your agent: NAME` (no framework has a colon in its name)."""
    return f"your agent: {agent.spec.name}"


def with_agent(scenario: ResolvedScenario, agent: ResolvedAgent) -> ResolvedScenario:
    """The scenario with `agent` as its assistant, run by the native loop: the same users, items and limits; the
    scenario's assistant system prompt kept when the agent's spec has none, so both rows get the same instructions."""
    return replace(scenario, assistant=replace(agent, system_prompt=agent.system_prompt or scenario.assistant.system_prompt))


async def run_comparison(scenario: ResolvedScenario, store: Store, frameworks: Sequence[str] | None = None,
                         judge: str | Path | ResolvedJudge = DEFAULT_JUDGE, *, console: Console | None = None,
                         show_progress: bool = True,
                         on_run: Callable[[FrameworkRun], None] | None = None,
                         agents: Sequence[ResolvedAgent] = (), simulator_gap: bool = False) -> Comparison:
    """Run (or resume) the scenario once per framework (default: every registered one that runs its kind), in order, with its wire log;
    label each run with `judge`; return the comparison, paired with the baseline (native) on the same episodes when
    it is among them.

    `agents` (bring your own agent: `backend: python`, `http-agent`, any agent spec) each add a row, `agent_label`:
    the scenario with that agent as its assistant under the native loop (`with_agent`). Its episode ids differ from
    native's (they hash the assistant), so its row has no paired columns; its rates sit beside the others'.
    `on_run` is called as each framework's run and judging end (the CLI prints its line there).
    `simulator_gap` (τ² scenarios with a model user) also runs each native-loop row's assistant with the scripted
    user (`scripted_baselines`), and those rows show the reward lost to the simulated user on the same tasks.
    A BackendError stops the comparison as FrameworkFailed, naming the framework; what finished is kept.
    """
    frameworks = list(frameworks or frameworks_for(scenario.spec.kind))
    preflight_frameworks(scenario, frameworks, agents)
    scripted = scripted_user_for(scenario) if simulator_gap else None
    labeller = judge if isinstance(judge, ResolvedJudge) else load_judge(judge)
    done: list[FrameworkRun] = []
    plan = [(name, name, scenario) for name in frameworks] + [(agent_label(a), default_framework(), with_agent(scenario, a)) for a in agents]
    for name, framework, target in plan:
        try:
            summary = await run_scenario(target, store, console=console, show_progress=show_progress, framework=framework, wire=True)
            labelled = await judge_run(store, summary.run_id, labeller, console=console, show_progress=False)
            store_judged_faults(store, summary.run_id, labelled.identity)
        except BackendError as exc:
            raise FrameworkFailed(name, exc) from exc
        done.append(FrameworkRun(name, summary, labelled))
        if on_run is not None:
            on_run(done[-1])
    baselines = {}
    if scripted is not None:
        native_rows = [(n, t) for n, f, t in plan if FRAMEWORKS.entry(f).baseline]
        baselines = await scripted_baselines(native_rows, scripted, store, console, show_progress)
    return comparison_of(store, scenario.spec.name, done, baselines)


def scripted_user_for(scenario: ResolvedScenario) -> ResolvedAgent | None:
    """The reference user a simulator-gap comparison seats beside the scenario's model user (its kind's views'
    `reference_user`: τ²'s scripted user); None when the scenario's user already is it (its rows are the baseline).
    A scenario of a kind without one is refused."""
    from testbed.specs.errors import SpecError

    views = kind_views(scenario.spec.kind)
    if views.reference_user is None:
        raise SpecError(scenario.path, "kind", "the simulator gap is measured on τ² tasks, against the scripted τ² user",
                        "drop --simulator-gap, or compare a τ² scenario")
    return views.reference_user(scenario)


async def scripted_baselines(rows: Sequence[tuple[str, ResolvedScenario]], scripted: ResolvedAgent, store: Store,
                             console: Console | None, show_progress: bool) -> dict[str, str]:
    """Row → the run (made or resumed now) of the row's scenario with the scripted user under the native loop."""
    out = {}
    for name, target in rows:
        try:
            summary = await run_scenario(replace(target, user=scripted), store, console=console, show_progress=show_progress)
        except BackendError as exc:
            raise FrameworkFailed(f"{name} with the scripted user", exc) from exc
        out[name] = summary.run_id
    return out


def shown_identity(store: Store, run: FrameworkRun) -> JudgeIdentity:
    """Whose labels a framework's row shows: of the judge that labelled it, the version every other face shows
    (testbed.store.labels.default_identity: the one written last when several versions labelled the run)."""
    return default_identity(store, run.summary.run_id, run.labelled.identity.judge) or run.labelled.identity


def comparison_of(store: Store, scenario: str, runs: list[FrameworkRun], baselines: dict[str, str] | None = None) -> Comparison:
    """The comparison of runs already made and labelled (one per framework); `baselines` row → its scripted-user run.
    Each run is read once, as one `RunFrames` under the labeller its row shows."""
    from testbed.analysis.reports.compare import compare_runs
    from testbed.analysis.wire_shape import compare_requests

    run_ids = {r.framework: r.summary.run_id for r in runs}
    labellers = {r.framework: shown_identity(store, r) for r in runs}
    frames = {framework: RunFrames(store, run_id, labellers[framework]) for framework, run_id in run_ids.items()}
    frame = compare_runs(frames, {row: RunFrames(store, run_id) for row, run_id in (baselines or {}).items()})
    episode, shapes = compare_requests(store, run_ids)
    return Comparison(scenario, runs, frame, episode, shapes, labellers, dict(baselines or {}), frames)


def compare(scenario: str | Path | ResolvedScenario, frameworks: Sequence[str] | None = None, store: Any = None, *,
            judge: str | Path | ResolvedJudge = DEFAULT_JUDGE, show_progress: bool = False,
            agents: Sequence[str | Path | ResolvedAgent] = (), simulator_gap: bool = False) -> Comparison:
    """`run_comparison` for a notebook or script: blocks until every framework has run and been labelled.

    `scenario` is a loaded scenario, or what `load_scenario` takes (then the user modes not every
    framework can run are left out, as `testbed compare` does); `store` is a Store or a path
    (default `$TESTBED_STORE` or `.testbed/store.sqlite`); `agents` are agent specs (paths or loaded) of your own
    agents, each a row beside the frameworks (`run_comparison`); `simulator_gap` adds the gap to the scripted τ² user.
    """
    if not isinstance(scenario, ResolvedScenario):
        loaded = load_scenario(scenario)
        frameworks = list(frameworks or frameworks_for(loaded.spec.kind))
        scenario = load_comparable(scenario, frameworks)[0]
    frameworks = list(frameworks or frameworks_for(scenario.spec.kind))
    resolved = scenario
    db = store if isinstance(store, Store) else Store(store)
    mine = [a if isinstance(a, ResolvedAgent) else load_agent(a) for a in agents]
    return asyncio.run(run_comparison(resolved, db, frameworks, judge, show_progress=show_progress, agents=mine,
                                      simulator_gap=simulator_gap))
