"""The interaction-awareness probe: question → one assistant answer → user-turn variants.

Episodes get stable ids (a hash of everything that shapes them), so a rerun of the same spec
finds its finished episodes and only does what is missing. The user turn runs through the same
framework as a dialogue's turns (testbed.frameworks), with a limit of one generated user turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from testbed.backends.base import BackendError, BackendUnavailable
from testbed.backends.factory import served_model_name
from testbed.concurrency import gather_or_cancel
from testbed.datasets import DatasetItem, score_answer
from testbed.frameworks import framework
from testbed.loop.orchestrator import ERROR, Limits, user_turn_count
from testbed.loop.participants import Assistant, SimulatedUser, user_sampling
from testbed.scenarios.base import EpisodeVariant, RunContext, Sink, emit, load_dataset_items, stable_hash, variant
from testbed.scenarios.human_reference import REAL_ASSISTANT, emit_references, has_reference, real_answer, with_reference
from testbed.specs.perturbation import PerturbationSpec, perturbation_specs
from testbed.specs.loader import ResolvedScenario
from testbed.specs.loader import check_conversation_slot
from testbed.specs.registries import ScenarioKindEntry
from testbed.specs.scenario import ProbeScenarioSpec
from testbed.store import EpisodeKey, EpisodeOutcome, SharedAnswer
from testbed.transcript import DATASET_SPEAKER, Message, Transcript


def answer_id(scenario: ResolvedScenario, item: DatasetItem) -> str:
    """Id of the shared assistant answer of an item (same assistant, same item → same answer)."""
    return stable_hash("answer", item.dataset, item.item_id, scenario.assistant.identity(), scenario.assistant.system_prompt)


def shows_real_answer(scenario: ResolvedScenario, item: DatasetItem) -> bool:
    """Whether the user turns of `item` follow its real answer (a real context, answer not regenerated)."""
    return has_reference(item) and not scenario.spec.regenerate_answer


def plan_item(scenario: ResolvedScenario, item: DatasetItem) -> list[EpisodeVariant]:
    """Every variant of one item, in a fixed order; a real context's reference episode first."""
    spec, a, u = scenario.spec, scenario.assistant, scenario.user
    user_identity = (u.identity(), scenario.user_prompt, spec.max_tokens)
    answer = answer_id(scenario, item)
    real = shows_real_answer(scenario, item)
    assistant_agent = REAL_ASSISTANT if real else a.spec.name
    models = (REAL_ASSISTANT if real else served_model_name(a.spec), served_model_name(u.spec))
    out = []
    for mode in spec.user_modes:
        for p in perturbation_specs(spec.perturbations):
            perturbation, identity = p.resolved_label, p.identity()
            for temperature in spec.temperatures:
                for sample in range(spec.samples_per_temperature):
                    def key(eid: str, mode=mode, perturbation=perturbation, temperature=temperature, sample=sample) -> EpisodeKey:
                        return EpisodeKey(eid, item.item_id, item.dataset, assistant_agent, models[0], u.spec.name,
                                          models[1], mode, temperature, sample, perturbation)
                    parts = (spec.name, answer, user_identity, mode, identity, temperature, sample, spec.seed)
                    out.append(variant(parts, key))
    return with_reference(item, out, (spec.kind, spec.name, spec.seed), weak=spec.regenerate_answer)


def initial_transcript(scenario: ResolvedScenario, item: DatasetItem) -> Transcript:
    """System prompt (if the assistant has one) and the item's messages, speakers marked. The item's one assistant
    answer is generated on it and shared by all its episodes, so the agent is asked under the shared answer's id
    (`answer_id`, which those episodes' copies of it name in `reused_from`)."""
    t = Transcript.of_episode(answer_id(scenario, item))
    if scenario.assistant.system_prompt:
        t.append(Message("system", scenario.assistant.system_prompt, scenario.assistant.spec.name, 0))
    for m in item.messages:
        t.append(Message(m["role"], m["content"], DATASET_SPEAKER, t.next_turn))
    return t


@dataclass
class ProbeItemRunner:
    """Runs the pending variants of one item and hands each finished episode to `sink`."""

    scenario: ResolvedScenario
    assistant: Assistant
    users: dict[str, SimulatedUser]
    shared: dict[str, dict]
    save_answer: Callable[[SharedAnswer], None]
    sink: Sink
    slot: Callable[[], contextlib.AbstractAsyncContextManager] = contextlib.nullcontext
    perturbations: dict[str, PerturbationSpec] = field(default_factory=dict)
    """Each perturbation by the label its episodes carry."""

    def __post_init__(self) -> None:
        if not self.perturbations:
            self.perturbations = {p.resolved_label: p for p in perturbation_specs(self.scenario.spec.perturbations)}

    async def _answer(self, item: DatasetItem, transcript: Transcript) -> tuple[Message, float | None]:
        if shows_real_answer(self.scenario, item):
            return real_answer(item, transcript.next_turn), None
        aid = answer_id(self.scenario, item)
        stored = self.shared.get(aid)
        if stored is not None:
            placed = replace(stored.message, speaker=self.scenario.assistant.spec.name, turn_index=transcript.next_turn)
            return placed, stored.task_score
        message = await self.assistant.respond(transcript)
        score = score_answer(item, message.content)
        answer = SharedAnswer(aid, item.item_id, message, score)
        self.save_answer(answer)
        self.shared[aid] = answer
        return message, score

    async def run(self, item: DatasetItem, variants: list[EpisodeVariant]) -> None:
        """Store a real context's reference episode, generate (or reuse) the answer once, then every pending user-turn variant."""
        base = initial_transcript(self.scenario, item)
        variants = await emit_references(item, variants, lambda: base, self._emit)
        if not variants:
            return
        try:
            async with self.slot():
                answer, score = await self._answer(item, base)
        except BackendUnavailable:
            raise
        except BackendError as exc:
            for v in variants:
                await self._emit(EpisodeOutcome(v.key, base.messages, "error", ERROR, f"assistant: {exc.reason}"))
            return
        aid = answer_id(self.scenario, item)
        await gather_or_cancel(self._variant(item, base, answer, aid, score, v) for v in variants)

    async def _variant(self, item: DatasetItem, base: Transcript, answer: Message, aid: str, score: float | None, v: EpisodeVariant) -> None:
        transcript = Transcript.of_episode(v.key.episode_id, base.messages)
        shown = self.perturbations[v.key.perturbation].apply(answer.content)
        transcript.append(replace(answer, content=shown, reused_from=aid))
        sampling = user_sampling(self.scenario.user, v.key.temperature, self.scenario.spec.max_tokens, v.seed)
        user = self.users[v.key.user_mode].derive(sampling=sampling)
        limits = Limits(max_user_turns=user_turn_count(transcript) + 1, reply_to_last_user_turn=False)
        try:
            async with self.slot():
                termination = await framework().converse(transcript, self.assistant, user, limits)
        except BackendUnavailable:
            raise
        except BackendError as exc:
            await self._emit(EpisodeOutcome(v.key, transcript.messages, "error", ERROR, f"user: {exc.reason}", score, transcript.usage()))
            return
        await self._emit(EpisodeOutcome(v.key, transcript.messages, "done", termination, None, score, transcript.usage()))

    async def _emit(self, outcome: EpisodeOutcome) -> None:
        await emit(self.sink, outcome)


class ProbeKind:
    """The probe as a scenario kind: units are dataset items, variants are user turns."""

    def plan(self, scenario: ResolvedScenario) -> list[tuple[DatasetItem, list[EpisodeVariant]]]:
        """Every item with its user-turn variants."""
        items = load_dataset_items(scenario, scenario.spec.dataset, scenario.spec.items)
        return [(item, plan_item(scenario, item)) for item in items]

    def runner(self, context: RunContext) -> ProbeItemRunner:
        """One runner for all items: the shared answers live in it."""
        s = context.scenario
        assistant = Assistant(s.assistant, context.backends["assistant"])
        users = {mode: SimulatedUser(s.user, context.backends["user"], mode, s.user_prompt) for mode in s.spec.user_modes}
        return ProbeItemRunner(s, assistant, users, context.shared, context.save_shared, context.sink, context.slot)


KIND = ScenarioKindEntry(name="probe", spec=ProbeScenarioSpec, runner=ProbeKind, report="probe", limit_field="items",
                         resolve=check_conversation_slot, sweepable=True)
"""The probe's entry in testbed.specs.registries.KINDS."""
