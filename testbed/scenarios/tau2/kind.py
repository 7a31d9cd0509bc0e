"""τ²-bench tasks as a scenario kind: units are tasks, variants are user mode × user temperature × whose seed varies
(`vary_seeds`) × the fault planted in the user's turns (`user_faults`, testbed.scenarios.tau2.fault_injection) × trial.

Everything τ² provides (tasks, policies, tools, guidelines, evaluator) is read from the installed
package when the scenario loads; a bad domain, task id or split, a missing package, a raw user on a
task where the user needs tools, or a managed server started without tool calling is a spec error
before any model call.

A RecursionError in an episode (a framework or τ²'s evaluator walking something nested too deeply) is that
episode's error, never the run's. An episode whose loop ended but whose scoring failed (τ²'s evaluator raised)
is stored as an error with the evaluator's reason beside its true termination (`user_stop`, `max_steps`, …),
so the error says what failed and the termination still says how the conversation ended.
"""

from __future__ import annotations

import random
from itertools import product
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from testbed.backends.base import BackendError, BackendUnavailable
from testbed.backends.factory import served_model_name, tool_call_parser_of
from testbed.concurrency import gather_or_cancel
from testbed.frameworks import framework
from testbed.frameworks.base import owns_client
from testbed.frameworks.catalogue import OPENAI_COMPATIBLE
from testbed.frameworks.tool_episode import ToolEpisode
from testbed.limits import MAX_JSON_DEPTH
from testbed.loop.orchestrator import ERROR
from testbed.loop.participants import TurnSampling
from testbed.scenarios.base import EpisodeVariant, RunContext, emit, stable_hash, variant
from testbed.scenarios.dialogue import check_servers as stop_if_servers_gone
from testbed.scenarios.tau2.domains import INSTALL, NOT_INSTALLED, Tau2Domain, Tau2Unavailable, domain, tau2_installed
from testbed.scenarios.tau2.episode import start_episode
from testbed.scenarios.tau2.evaluation import EvaluationFailed
from testbed.scenarios.tau2.fault_injection import FaultyUser
from testbed.scenarios.tau2.participants import GoalUser, ToolAssistant
from testbed.scenarios.tau2.prompts import USER_SLOTS, assistant_prompt, user_prompt
from testbed.scenarios.tau2.scoring import score
from testbed.scenarios.tau2.scripted_user import BACKEND as SCRIPTED_BACKEND, SCRIPTED_USER_MODEL, ScriptedGoalUser, UserScript
from testbed.specs.errors import SpecError
from testbed.specs.loader import ResolvedAgent, ResolvedScenario
from testbed.specs.registries import FrameworkEntry, ScenarioKindEntry
from testbed.specs.tau2 import VARY_SEEDS_KEY, FaultPlan, Tau2ScenarioSpec, parse_plan
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.transcript import Message
from testbed.wire.attribution import attribute
from testbed.wire.routing import routed


def _domain(scenario: ResolvedScenario) -> Tau2Domain:
    try:
        return domain(scenario.spec.domain)
    except Tau2Unavailable:
        raise SpecError(scenario.path, "domain", NOT_INSTALLED, INSTALL) from None


def select_tasks(scenario: ResolvedScenario) -> list[Any]:
    """The scenario's τ² tasks: its ids (in the given order) or its split, then the first `limit` or a seeded sample."""
    spec, d = scenario.spec, _domain(scenario)
    chosen = spec.tasks
    if chosen.ids is not None:
        unknown = [t for t in chosen.ids if t not in d.tasks]
        if unknown:
            raise SpecError(scenario.path, "tasks.ids", f"domain {d.name} has no task {unknown[0]!r}",
                            f"use task ids of the installed τ² package (e.g. {', '.join(list(d.tasks)[:3])})")
        ids = list(chosen.ids)
    else:
        try:
            ids = d.task_ids(chosen.split if chosen.split is not None else d.default_split)
        except ValueError as exc:
            raise SpecError(scenario.path, "tasks.split", str(exc), "use one of the splits named, or drop `split`") from None
    if chosen.seed is not None:
        ids = sorted(ids)
        random.Random(chosen.seed).shuffle(ids)
    return [d.tasks[t] for t in (ids[: chosen.limit] if chosen.limit else ids)]


def _tool_calling_problem(agent: ResolvedAgent) -> str | None:
    spec = agent.spec
    if spec.managed and tool_call_parser_of(spec) is None:
        return f"agent {spec.name}'s managed vLLM server would start without tool calling, which τ² tasks need"
    return None


def check_tau2(path: Path, spec: Tau2ScenarioSpec, prompt: str | None) -> dict[str, Any]:
    """The kind's resolve hook: the package, the prompt's slots and the user modes, checked at load time."""
    if not tau2_installed():
        raise SpecError(path, "domain", NOT_INSTALLED, INSTALL)
    if prompt is not None:
        missing = [s for s in USER_SLOTS if "{" + s + "}" not in prompt]
        if missing:
            raise SpecError(path, "user_prompt_file", f"the τ² user prompt lacks the slot {{{missing[0]}}}",
                            "put {guidelines} and {scenario} where τ²'s guidelines and the task's scenario go")
    if "raw" in spec.user_modes and spec.domain == "telecom":
        raise SpecError(path, "user_modes", "a raw user cannot call tools, and telecom's user must (its phone)",
                        "use user_modes: [instructed] for telecom")
    return {}


def is_scripted(agent: ResolvedAgent) -> bool:
    """Whether the agent is the scripted τ² user (`backend: tau2-scripted`), which no model plays."""
    return agent.spec.backend == SCRIPTED_BACKEND


def check_scripted(scenario: ResolvedScenario) -> None:
    """Refuse the scripted user where it cannot play: in the assistant's seat, or as telecom's user, who must work its
    phone's tools (the script only talks)."""
    if is_scripted(scenario.assistant):
        raise SpecError(scenario.path, "assistant",
                        f"agent {scenario.assistant.spec.name} is the scripted τ² user, not an assistant",
                        "seat it as `user:`, and name a model or agent as `assistant:`")
    if is_scripted(scenario.user) and scenario.spec.domain == "telecom":
        raise SpecError(scenario.path, "user", "the scripted τ² user cannot use telecom's phone tools, which its user must",
                        "use a model user for telecom, or the scripted user on mock, airline or retail")


def check_servers(scenario: ResolvedScenario) -> None:
    """Refuse a managed server that would start without tool calling (the assistant's; in telecom the user's too)."""
    agents = [scenario.assistant] + ([scenario.user] if scenario.spec.domain == "telecom" else [])
    for agent in agents:
        problem = _tool_calling_problem(agent)
        if problem:
            raise SpecError(agent.path, "server.tool_call_parser", problem,
                            "add `server: {tool_call_parser: tolerant}` (the packaged parser: hermes tags, else JSON calls "
                            "as small models write them) or a parser that fits the model's chat template")


@dataclass(frozen=True, slots=True)
class Tau2Variant(EpisodeVariant):
    """A τ² episode to run: its key, its own seed (from its id), whose seed varies across trials, the seed of the
    side held fixed (the same in every trial of the task; unused under `both`), and the fault planted in its user's
    turns (None: none; testbed.scenarios.tau2.fault_injection)."""

    vary_seeds: str = "both"
    fixed_seed: int = 0
    user_fault: FaultPlan | None = None


def fixed_seed(spec: Tau2ScenarioSpec, task_id: str, side: str) -> int:
    """The seed `side` keeps in every trial of a task when only the other side's varies: one per task, side and
    spec seed, the same under every user mode, temperature and user model, so conditions differ only where they must."""
    return int(stable_hash(spec.kind, task_id, spec.seed, side, "fixed-seed")[:8], 16)


TurnSeed = tuple[int, bool]
"""A side's base seed and whether the turn index is added to it (TurnSampling.seed_per_turn)."""


def side_seeds(v: EpisodeVariant, agent_seed: int | None) -> tuple[TurnSeed, TurnSeed]:
    """The assistant's and the user's (seed, per turn) for one episode.

    `both` (as before `vary_seeds` existed): the assistant's agent seed when its spec fixes one, else the episode's;
    the user's the episode's. `user`: the assistant's agent seed or the task's fixed seed; the user's the episode's.
    `assistant`: the assistant's the episode's, the user's the task's fixed seed. A seed of the episode's or the
    task's own is offset by the turn index, so turns of one episode do not draw alike; an agent's own seed is not.
    """
    vary = v.vary_seeds if isinstance(v, Tau2Variant) else "both"
    own = (agent_seed, False) if agent_seed is not None else None
    if vary == "user":
        return own or (v.fixed_seed, True), (v.seed, True)
    if vary == "assistant":
        return (v.seed, True), (v.fixed_seed, True)
    return own or (v.seed, True), (v.seed, True)


def marked(messages: list[Message], v: EpisodeVariant) -> list[Message]:
    """The episode's messages with its `vary_seeds` in every generated message's sampling (`VARY_SEEDS_KEY`), so the
    condition is read back per episode; under `both` they are left as they are, as before the field existed."""
    vary = v.vary_seeds if isinstance(v, Tau2Variant) else "both"
    if vary == "both":
        return messages
    return [replace(m, sampling={**m.sampling, VARY_SEEDS_KEY: vary}) if m.sampling is not None else m for m in messages]


def planted(user: Any, task: Any, v: EpisodeVariant) -> Any:
    """The episode's user, wrapped to plant its variant's user fault where it has one."""
    plan = v.user_fault if isinstance(v, Tau2Variant) else None
    return user if plan is None else FaultyUser(user, task, plan, v.seed)


def too_deep(where: str, exc: RecursionError) -> str:
    """The episode's one-line reason for a RecursionError in its loop or its scoring: something in the episode (a tool
    call's arguments, a result) nested deeper than Python walks. The testbed's own readers check tool-call arguments
    before parsing them (testbed.tool_arguments), so this is a framework's or τ²'s own walk; it costs the episode."""
    return (f"{where}: RecursionError ({' '.join(str(exc).split())[:120]}): something in the episode nests too deeply "
            f"to walk; the testbed takes tool-call arguments up to {MAX_JSON_DEPTH} levels deep")


@dataclass
class Tau2Runner:
    """Runs every trial of one task; each is its own episode with a fresh environment."""

    context: RunContext

    async def run(self, task: Any, variants: list[EpisodeVariant]) -> None:
        """The variants run concurrently (a lone one without a task of its own)."""
        if len(variants) == 1:
            await self._one(task, variants[0])
        else:
            await gather_or_cancel(self._one(task, v) for v in variants)

    def _participants(self, d: Tau2Domain, task: Any, v: EpisodeVariant):
        s, spec, ctx = self.context.scenario, self.context.scenario.spec, self.context
        a = s.assistant.spec.sampling
        (a_seed, a_per_turn), (u_seed, u_per_turn) = side_seeds(v, a.seed)
        assistant = ToolAssistant(s.assistant, ctx.backends["assistant"], d.tools, ctx.tokens(s.assistant),
                                  TurnSampling(a.temperature, spec.max_tokens, a.top_p, a_seed, a_per_turn))
        prompt = user_prompt(s.user_prompt or "{guidelines}\n\n<scenario>\n{scenario}\n</scenario>", task, with_tools=bool(d.user_tools))
        sampling = TurnSampling(v.key.temperature, spec.max_tokens, s.user.spec.sampling.top_p, u_seed, u_per_turn)
        if is_scripted(s.user):
            script = UserScript.of(task)
            return assistant, planted(ScriptedGoalUser(s.user, ctx.backends["user"].for_script(script), script,
                                                       v.key.user_mode, prompt, sampling), task, v)
        user = GoalUser(s.user, ctx.backends["user"], v.key.user_mode, prompt, d.user_tools, ctx.tokens(s.user),
                        sampling)
        return assistant, planted(user, task, v)

    async def _one(self, task: Any, v: EpisodeVariant) -> None:
        ctx, spec = self.context, self.context.scenario.spec
        d = domain(spec.domain)
        assistant, user = self._participants(d, task, v)
        transcript, desk = start_episode(task, d.new_environment, assistant_prompt(d.policy), ctx.scenario.assistant.spec.name,
                                         v.key.episode_id)
        tap = ctx.wire.open_tap(retry=owns_client(ctx.framework)) if ctx.wire is not None else None
        if tap is not None:
            assistant, user = routed(assistant, tap, "assistant"), routed(user, tap, "user")
        episode = ToolEpisode(transcript, assistant, user, desk, spec.max_steps, spec.max_errors)
        try:
            async with ctx.slot():
                termination = await framework(ctx.framework).run_task(episode)
        except BackendUnavailable:
            raise
        except BackendError as exc:
            await stop_if_servers_gone(ctx)
            reason = exc.reason if tap is None or tap.gave_up is None else f"{ctx.framework}: {tap.gave_up}"
            outcome = EpisodeOutcome(v.key, marked(transcript.messages, v), "error", ERROR, reason, None, transcript.usage())
        except RecursionError as exc:
            outcome = EpisodeOutcome(v.key, marked(transcript.messages, v), "error", ERROR, too_deep(ctx.framework, exc), None,
                                     transcript.usage())
        else:
            try:
                reward = await score(d, task, transcript.messages, termination)
            except EvaluationFailed as exc:
                outcome = EpisodeOutcome(v.key, marked(transcript.messages, v), "error", termination, str(exc), None,
                                         transcript.usage())
            except RecursionError as exc:
                outcome = EpisodeOutcome(v.key, marked(transcript.messages, v), "error", termination,
                                         too_deep("τ²'s evaluator", exc), None, transcript.usage())
            else:
                outcome = EpisodeOutcome(v.key, marked(transcript.messages, v), "done", termination, None,
                                         reward.reward if reward is not None else None, transcript.usage(), reward=reward)
        if tap is not None:
            records = tap.take()
            if ctx.keep_wire:
                outcome = replace(outcome, wire=attribute(records, transcript))
        await emit(ctx.sink, outcome)


def check_seeds(scenario: ResolvedScenario) -> None:
    """Refuse `vary_seeds: assistant` for an assistant whose spec fixes its seed: it could not vary."""
    seed = scenario.assistant.spec.sampling.seed
    if "assistant" in scenario.spec.vary_seeds and seed is not None:
        raise SpecError(scenario.path, "vary_seeds",
                        f"the assistant's seed cannot vary across trials: agent {scenario.assistant.spec.name} fixes sampling.seed: {seed}",
                        "drop sampling.seed from the agent spec, or drop `assistant` from vary_seeds")


def scenario_identity(scenario: ResolvedScenario) -> tuple:
    """What every episode of the scenario shares and its ids hash: agents, prompt and limits."""
    spec, a, u = scenario.spec, scenario.assistant, scenario.user
    return (a.identity(), u.identity(), scenario.user_prompt, spec.domain, spec.max_tokens, spec.max_steps,
            spec.max_errors)


class Tau2Kind:
    """τ² tasks as a scenario kind."""

    def plan(self, scenario: ResolvedScenario) -> list[tuple[Any, list[EpisodeVariant]]]:
        """Every selected task with its variants: user mode × temperature × vary_seeds × user fault × trial, with stable
        ids (`vary_seeds` joins an id only when it is not `both`, a user fault only when one is planned, so ids made
        before they existed stay). The scripted user's
        episodes are stored under the user model SCRIPTED_USER_MODEL, whatever its spec is named, so reports find them."""
        check_scripted(scenario)
        check_servers(scenario)
        check_seeds(scenario)
        spec, a, u = scenario.spec, scenario.assistant, scenario.user
        identity, source = scenario_identity(scenario), spec.dataset
        user_model = SCRIPTED_USER_MODEL if is_scripted(u) else served_model_name(u.spec)
        out = []
        for task in select_tasks(scenario):
            variants = []
            fixed = {side: fixed_seed(spec, task.id, side) for side in ("assistant", "user")}
            for mode in spec.user_modes:
                for temperature in spec.temperatures:
                    for vary, plan, trial in product(spec.vary_seeds, map(parse_plan, spec.user_faults), range(spec.trials)):
                        condition = plan.perturbation if plan is not None else "none"

                        def key(eid: str, mode=mode, temperature=temperature, trial=trial, task_id=task.id,
                                condition=condition) -> EpisodeKey:
                            return EpisodeKey(eid, task_id, source, a.spec.name, served_model_name(a.spec), u.spec.name,
                                              user_model, mode, temperature, trial, condition)
                        parts = (spec.kind, spec.name, task.id, identity, mode, temperature, trial, spec.seed)
                        extra = ((vary,) if vary != "both" else ()) + ((condition,) if plan is not None else ())
                        v = variant(parts + extra, key)
                        variants.append(Tau2Variant(v.key, v.seed, vary, fixed["assistant" if vary == "user" else "user"], plan))
            out.append((task, variants))
        return out

    def runner(self, context: RunContext) -> Tau2Runner:
        """A runner for tasks."""
        return Tau2Runner(context)


FRAMEWORK = FrameworkEntry("tau2", "testbed.scenarios.tau2.reference_loop:Tau2Framework", kinds=("tau2",), user_modes=("instructed",),
                           backends=OPENAI_COMPATIBLE, modules=("tau2.orchestrator.orchestrator", "litellm"), extra="tau2")
"""τ²-bench's own orchestrator, agent and user simulator (through litellm) as a framework: the benchmark's reference loop.
Its entry lives with the kind, not in testbed.frameworks.catalogue, because the loop is made of the kind's parts."""

KIND = ScenarioKindEntry(name="tau2", spec=Tau2ScenarioSpec, runner=Tau2Kind, report="tau2", limit_field="tasks", resolve=check_tau2,
                         sweepable=True, views="tau2", scripted_user=True)
"""The τ² kind's entry in testbed.specs.registries.KINDS."""
