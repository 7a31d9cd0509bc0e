"""Information gathering: the assistant must ask for hidden facts; the user reveals only what is asked.

The fact-release logic lives here, not in the user's model: after every assistant turn the facts
it asked about are released, and the simulated user's prompt holds the statements of released
facts only. A user model cannot leak what it was never shown; the leak rate measures the rest
(guesses and invented details that happen to match).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.concurrency import gather_or_cancel
from testbed.loop.orchestrator import ASSISTANT_DONE
from testbed.loop.participants import DialogueUser, with_tokens
from testbed.scenarios.base import EpisodeVariant, RunContext
from testbed.scenarios.dialogue import (conversation_identity, conversation_sampling, opening_transcript, plan_conversations,
                                       run_conversation)
from testbed.scenarios.info_tasks import InfoTask, asked_facts, count_questions, resolve_task_set
from testbed.specs.conversation import InfoGatheringScenarioSpec
from testbed.specs.loader import ResolvedScenario
from testbed.specs.registries import ScenarioKindEntry
from testbed.templates import fill_slots
from testbed.transcript import Message, Transcript

NOTHING_RELEASED = "(none yet: the assistant has not asked about any of your details)"
SOURCE = "info-gathering"


def select_tasks(scenario: ResolvedScenario) -> list[InfoTask]:
    """The scenario's tasks: filtered by domain, then the first `limit` or a seeded sample."""
    import random

    spec = scenario.spec
    tasks = [t for t in scenario.task_set.tasks if not spec.domains or t.domain in spec.domains]
    if spec.tasks.seed is not None:
        tasks = sorted(tasks, key=lambda t: t.id)
        random.Random(spec.tasks.seed).shuffle(tasks)
    return tasks[: spec.tasks.limit] if spec.tasks.limit else tasks


@dataclass
class FactRelease:
    """Which hidden facts the assistant has asked about so far, and at which turn each was released."""

    task: InfoTask
    released_at: dict[str, int] = field(default_factory=dict)

    def observe(self, assistant_turn: Message) -> None:
        """Release every fact the assistant's questions ask about (first time only)."""
        for fact_id in sorted(asked_facts(assistant_turn.content, self.task)):
            self.released_at.setdefault(fact_id, assistant_turn.turn_index)

    def statements(self) -> str:
        """The released facts as the user would say them, for the user's prompt."""
        lines = [f"- {f.topic}: {f.statement}" for f in self.task.facts if f.id in self.released_at]
        return "\n".join(lines) or NOTHING_RELEASED


def is_final_output(message: Message) -> bool:
    """An assistant turn that asks nothing is its answer: the episode ends there."""
    return count_questions(message.content) == 0


def released_prompt(scenario: ResolvedScenario, release: FactRelease) -> str:
    """The information-gathering user prompt holding the facts released so far."""
    values = {"released_facts": release.statements(), "end_marker": scenario.spec.end_marker}
    return fill_slots(scenario.user_prompt or "", values)


@dataclass
class FactHoldingUser:
    """The information-gathering user: an instructed dialogue user whose prompt holds the released facts only.

    The prompt is filled anew at every turn from `release`, so a fact reaches the user's model
    only after the assistant asked about it.
    """

    scenario: ResolvedScenario
    user: DialogueUser
    release: FactRelease

    async def respond(self, transcript: Transcript) -> Message:
        """The user's next turn, written with the facts released so far."""
        return await self.user.derive(prompt=released_prompt(self.scenario, self.release)).respond(transcript)


@dataclass
class InfoGatheringRunner:
    """Runs each variant of a task as a conversation with fact release."""

    context: RunContext

    async def run(self, unit: InfoTask, variants: list[EpisodeVariant]) -> None:
        """Variants of a task run concurrently."""
        await gather_or_cancel(self._one(unit, v) for v in variants)

    async def _one(self, task: InfoTask, v: EpisodeVariant) -> None:
        s = self.context.scenario
        release = FactRelease(task)

        def after_assistant(message: Message, _: Transcript) -> str | None:
            if is_final_output(message):
                return ASSISTANT_DONE
            release.observe(message)
            return None

        user = with_tokens(DialogueUser(s.user, self.context.backends["user"], "instructed", released_prompt(s, release),
                                        conversation_sampling(self.context, v)), self.context.tokens(s.user))
        holder = FactHoldingUser(s, user, release)
        transcript = opening_transcript(s, [{"role": "user", "content": task.request}], "task", v.key.episode_id)
        await run_conversation(self.context, v, transcript, holder, after_assistant)


class InfoGatheringKind:
    """Information gathering as a scenario kind: units are tasks, variants are conversations."""

    def plan(self, scenario: ResolvedScenario) -> list[tuple[InfoTask, list[EpisodeVariant]]]:
        """Every selected task with its conversation variants."""
        identity = conversation_identity(scenario)
        return [(t, plan_conversations(scenario, t.id, SOURCE, identity)) for t in select_tasks(scenario)]

    def runner(self, context: RunContext) -> InfoGatheringRunner:
        """A runner for tasks."""
        return InfoGatheringRunner(context)


KIND = ScenarioKindEntry(name="info_gathering", spec=InfoGatheringScenarioSpec, runner=InfoGatheringKind,
                         report="info_gathering", limit_field="tasks", resolve=resolve_task_set)
"""Information gathering's entry in testbed.specs.registries.KINDS."""
