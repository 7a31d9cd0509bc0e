"""Free dialogues: an assistant and a simulated user talk for up to N user turns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from testbed.backends.base import BackendError, BackendUnavailable
from testbed.backends.factory import served_model_name
from testbed.concurrency import gather_or_cancel
from testbed.datasets import score_answer
from testbed.frameworks import framework
from testbed.frameworks.base import owns_client
from testbed.loop.orchestrator import ERROR, Limits
from testbed.loop.participants import Assistant, DialogueUser, Participant, user_sampling, with_tokens
from testbed.scenarios.base import EpisodeVariant, RunContext, emit, load_dataset_items, variant
from testbed.scenarios.human_reference import emit_references, with_reference
from testbed.specs.loader import ResolvedScenario
from testbed.specs.conversation import DialogueScenarioSpec
from testbed.specs.loader import read_personas
from testbed.specs.registries import ScenarioKindEntry
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.templates import fill_slots
from testbed.transcript import DATASET_SPEAKER, Message, Transcript, is_assistant
from testbed.wire.attribution import attribute
from testbed.wire.routing import routed


@dataclass(frozen=True)
class Opening:
    """What starts a dialogue: the first user turn, who speaks it, and the persona behind the user."""

    unit_id: str
    source: str
    speaker: str
    messages: tuple[dict[str, str], ...]
    persona: str
    goal: str
    item: object | None = None


def openings(scenario: ResolvedScenario) -> list[Opening]:
    """Dataset items played by the default persona, or the personas with their own opening lines."""
    spec = scenario.spec
    if spec.opening == "persona":
        return [Opening(p.id, "personas", p.name, ({"role": "user", "content": p.opening},), p.persona, p.goal) for p in scenario.personas]
    items = load_dataset_items(scenario, spec.dataset, spec.items)
    return [Opening(i.item_id, i.dataset, DATASET_SPEAKER, tuple(i.messages), spec.default_persona, spec.default_goal, i) for i in items]


def limits_of(spec) -> Limits:
    """The scenario's stopping rules."""
    return Limits(spec.max_user_turns, spec.token_budget, spec.end_marker)


def conversation_identity(scenario: ResolvedScenario) -> tuple:
    """What every conversation of the scenario shares and its episode ids hash: the agents, prompts and limits."""
    spec, a, u = scenario.spec, scenario.assistant, scenario.user
    return (a.identity(), a.system_prompt, u.identity(), scenario.user_prompt, spec.max_tokens,
            spec.max_user_turns, spec.token_budget, spec.end_marker)


def plan_conversations(scenario: ResolvedScenario, unit_id: str, source: str, identity: tuple | None = None) -> list[EpisodeVariant]:
    """Variants of one conversation unit: user mode × temperature × sample, with stable ids.

    `identity` is `conversation_identity(scenario)`, which a plan of many units computes once and passes in.
    """
    spec, a, u = scenario.spec, scenario.assistant, scenario.user
    if identity is None:
        identity = conversation_identity(scenario)
    out = []
    for mode in spec.user_modes:
        for temperature in spec.temperatures:
            for sample in range(spec.samples_per_temperature):
                def key(eid: str, mode=mode, temperature=temperature, sample=sample) -> EpisodeKey:
                    return EpisodeKey(eid, unit_id, source, a.spec.name, served_model_name(a.spec), u.spec.name,
                                      served_model_name(u.spec), mode, temperature, sample, "none")
                out.append(variant((spec.kind, spec.name, unit_id, identity, mode, temperature, sample, spec.seed), key))
    return out


def opening_transcript(scenario: ResolvedScenario, messages, speaker: str, episode_id: str | None = None) -> Transcript:
    """The assistant's system prompt (if any) and the opening user turn(s), of stored episode `episode_id` when given
    (the id the assistant's requests carry)."""
    t = Transcript() if episode_id is None else Transcript.of_episode(episode_id)
    if scenario.assistant.system_prompt:
        t.append(Message("system", scenario.assistant.system_prompt, scenario.assistant.spec.name, 0))
    for m in messages:
        t.append(Message(m["role"], m["content"], speaker, t.next_turn))
    return t


def first_answer(transcript: Transcript) -> str | None:
    """The assistant's first reply, which task accuracy is measured on."""
    return next((m.content for m in transcript.messages if is_assistant(m)), None)


async def run_conversation(
    context: RunContext,
    variant_: EpisodeVariant,
    transcript: Transcript,
    user: Participant,
    after_assistant: Callable[[Message, Transcript], str | None] | None = None,
    score: Callable[[Transcript], float | None] = lambda _: None,
) -> None:
    """Converse on `transcript` and hand the episode to the sink: done with its termination, or
    error with the reason and the turns so far. Every multi-turn kind ends its episodes here."""
    spec = context.scenario.spec
    agent = context.scenario.assistant
    assistant: Participant = with_tokens(Assistant(agent, context.backends["assistant"]), context.tokens(agent))
    tap = context.wire.open_tap(retry=owns_client(context.framework)) if context.wire is not None else None
    if tap is not None:
        assistant, user = routed(assistant, tap, "assistant"), routed(user, tap, "user")
    try:
        async with context.slot():
            termination = await framework(context.framework).converse(transcript, assistant, user, limits_of(spec), after_assistant)
    except BackendUnavailable:
        raise
    except BackendError as exc:
        await check_servers(context)
        reason = exc.reason if tap is None or tap.gave_up is None else f"{context.framework}: {tap.gave_up}"
        outcome = EpisodeOutcome(variant_.key, transcript.messages, "error", ERROR, reason, None, transcript.usage())
    else:
        outcome = EpisodeOutcome(variant_.key, transcript.messages, "done", termination, None, score(transcript), transcript.usage())
    if tap is not None:
        records = tap.take()
        if context.keep_wire:
            outcome = replace(outcome, wire=attribute(records, transcript))
    await emit(context.sink, outcome)


async def check_servers(context: RunContext) -> None:
    """After a framework's episode failed, stop the run (BackendUnavailable) if a server refused the key or no
    longer answers: a framework's own client cannot tell the testbed, and every remaining episode would fail alike."""
    if not owns_client(context.framework):
        return
    if context.wire is not None and context.wire.rejected:
        raise BackendUnavailable(context.wire.rejected)
    for backend in {id(b): b for b in context.backends.values()}.values():
        check = getattr(backend, "check_health", None)
        if check is not None:
            await check()


def conversation_sampling(context: RunContext, v: EpisodeVariant):
    """The simulated user's sampling in a multi-turn episode: the variant's temperature, a seed per turn."""
    s = context.scenario
    return user_sampling(s.user, v.key.temperature, s.spec.max_tokens, v.seed, per_turn=True)


@dataclass
class DialogueRunner:
    """Runs every variant of one opening as a full conversation."""

    context: RunContext

    async def run(self, unit: Opening, variants: list[EpisodeVariant]) -> None:
        """A real context's reference episode is stored first; each other variant is its own conversation, and they
        run concurrently (a lone one without a task of its own)."""
        s = self.context.scenario
        variants = await emit_references(unit.item, variants, lambda: opening_transcript(s, unit.messages, unit.speaker),
                                         lambda o: emit(self.context.sink, o))
        if not variants:
            return
        if len(variants) == 1:
            await self._one(unit, variants[0])
        else:
            await gather_or_cancel(self._one(unit, v) for v in variants)

    async def _one(self, unit: Opening, v: EpisodeVariant) -> None:
        s = self.context.scenario
        spec = s.spec
        prompt = fill_slots(s.user_prompt or "", {"persona": unit.persona, "goal": unit.goal, "end_marker": spec.end_marker})
        user = with_tokens(DialogueUser(s.user, self.context.backends["user"], v.key.user_mode,
                                        prompt if v.key.user_mode == "instructed" else None, conversation_sampling(self.context, v)),
                           self.context.tokens(s.user))

        def score(t: Transcript) -> float | None:
            answer = first_answer(t)
            return score_answer(unit.item, answer) if unit.item is not None and answer is not None else None

        await run_conversation(self.context, v, opening_transcript(s, unit.messages, unit.speaker, v.key.episode_id), user,
                               score=score)


class DialogueKind:
    """Dialogues as a scenario kind: units are openings, variants are conversations."""

    def plan(self, scenario: ResolvedScenario) -> list[tuple[Opening, list[EpisodeVariant]]]:
        """Every opening with its conversation variants; a real context's reference episode first (a weak one: the
        simulated users answer the assistant's own reply, not the real one)."""
        identity = conversation_identity(scenario)
        spec = scenario.spec
        return [(o, with_reference(o.item, plan_conversations(scenario, o.unit_id, o.source, identity),
                                   (spec.kind, spec.name, spec.seed), weak=True)) for o in openings(scenario)]

    def runner(self, context: RunContext) -> DialogueRunner:
        """A runner for openings."""
        return DialogueRunner(context)


KIND = ScenarioKindEntry(name="dialogue", spec=DialogueScenarioSpec, runner=DialogueKind, report="conversation",
                         limit_field="items", resolve=read_personas, sweepable=True)
"""The dialogue's entry in testbed.specs.registries.KINDS."""
