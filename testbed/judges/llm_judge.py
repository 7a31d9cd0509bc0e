"""An LLM judge: a prompt bound to a model through any backend, structured output where possible."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from testbed.backends.base import Backend, BackendError, BackendUnavailable, GenerateRequest
from testbed.concurrency import gather_or_cancel
from testbed.control_tokens import GENERIC, ControlTokens
from testbed.judges.parsing import UnparsableVerdict, parse_verdict
from testbed.judges.prompting import render_prompt, verdict_schema
from testbed.judges.specs import ResolvedJudge
from testbed.judges.verdict import JudgeInput, Verdict
from testbed.specs.registries import JudgeKindEntry
from testbed.store.labels import JudgeIdentity

if TYPE_CHECKING:
    from testbed.judges.base import OnVerdict

REPAIR = "Your reply was not a valid verdict: {problem}. Reply again with only the JSON object."


@dataclass
class LLMJudge:
    """Asks a model for a verdict; retries a bounded number of times; otherwise the turn is unscored.

    With a backend that honours JSON schemas the reply is constrained to the verdict schema; with
    others the schema is only described in the prompt and the reply is parsed strictly. A retry
    shows the model its previous reply and what was wrong with it.
    """

    judge: ResolvedJudge
    backend: Backend | None = None
    """The model to ask; None means the agent the judge spec binds, started by `judge_all` for its run."""
    commit_every: ClassVar[int] = 1
    """Each verdict is written as it arrives (it cost a model call), so a killed judge run loses none."""

    @cached_property
    def tokens(self) -> ControlTokens:
        """The judge model's control tokens, neutralised in everything judged and in replies shown back."""
        return ControlTokens.for_agent(self.judge.agent.spec) if self.judge.agent is not None else GENERIC

    @property
    def name(self) -> str:
        """The judge's name, as stored with its labels."""
        return self.judge.spec.name

    @property
    def version(self) -> str:
        """The prompt version, as stored with the labels."""
        return self.judge.spec.prompt_version or "unversioned"

    @property
    def identity(self) -> JudgeIdentity:
        """Spec name, prompt version and served model: a new prompt or model labels afresh, a rerun resumes."""
        from testbed.backends.factory import served_model_name

        assert self.judge.agent is not None
        return JudgeIdentity(self.name, self.version, served_model_name(self.judge.agent.spec))

    async def judge_turn(self, item: JudgeInput) -> tuple[Verdict, int]:
        """The verdict on one turn and the number of model calls it took."""
        spec = self.judge.spec
        assert self.judge.prompt is not None and self.backend is not None, "judge_turn needs a bound backend"
        messages = [{"role": "user", "content": render_prompt(self.judge.prompt, item, self.tokens)}]
        schema = verdict_schema(spec.task)
        response_format = (
            {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
            if self.backend.capabilities.structured_output else None
        )
        replies: list[str] = []
        for attempt in range(spec.max_retries + 1):
            request = GenerateRequest(messages, temperature=spec.temperature, max_tokens=spec.max_tokens,
                                      response_format=response_format, seed=attempt)
            completion = await self.backend.generate(request)
            replies.append(completion.text)
            try:
                return parse_verdict(completion.text, spec.task), attempt + 1
            except UnparsableVerdict as exc:
                messages = [*messages[:1], {"role": "assistant", "content": self.tokens.neutralise(completion.text)},
                            {"role": "user", "content": REPAIR.format(problem=self.tokens.neutralise(str(exc)))}]
        raw = "\n---\n".join(replies)
        return Verdict(None, None, f"unparsable after {len(replies)} attempts", raw), len(replies)


    async def judge_all(self, items: Sequence[JudgeInput], on_verdict: OnVerdict | None = None) -> list[tuple[Verdict, int]]:
        """Verdicts (and model calls taken) for items, in order, through the bound model.

        Concurrency is bounded by the judge spec; a call that fails for good is an unscored verdict
        with the reason, never an exception that loses the verdicts already given (an unreachable
        server, BackendUnavailable, still stops the run). `on_verdict(i, ...)` is called as each
        verdict arrives, so callers can store it at once. Without a bound backend, the spec's agent
        is started for this call and stopped after.
        """
        from testbed.backends.factory import BackendPool

        assert self.judge.agent is not None
        async with BackendPool() as pool:
            llm = self if self.backend is not None else replace(self, backend=await pool.backend_for(self.judge.agent.spec))
            gate = asyncio.Semaphore(self.judge.spec.concurrency)

            async def one(i: int, item: JudgeInput) -> tuple[Verdict, int]:
                async with gate:
                    try:
                        verdict, attempts = await llm.judge_turn(item)
                    except BackendUnavailable:
                        raise
                    except BackendError as exc:
                        verdict, attempts = Verdict(None, None, f"judge call failed: {exc.reason}"), 0
                if on_verdict is not None:
                    on_verdict(i, verdict, attempts)
                return verdict, attempts

            return await gather_or_cancel(one(i, item) for i, item in enumerate(items))


def build(resolved: ResolvedJudge, backend: Backend | None = None) -> LLMJudge:
    """The `llm` judge kind's builder (see JUDGE_KINDS): the spec's prompt on `backend` or on its agent."""
    return LLMJudge(resolved, backend)


async def judge_all(
    judge: ResolvedJudge,
    items: list[JudgeInput],
    *,
    backend: Backend | None = None,
    on_verdict: OnVerdict | None = None,
) -> list[tuple[Verdict, int]]:
    """`LLMJudge(judge, backend).judge_all(items, on_verdict)`, for callers that hold only the resolved spec."""
    return await LLMJudge(judge, backend).judge_all(items, on_verdict)


JUDGE_KIND = JudgeKindEntry("llm", build, prompted=True, requires=("prompt_file", "prompt_version", "agent"), article="an")
"""The LLM judge's entry in testbed.specs.registries.JUDGE_KINDS: a prompt on a bound agent."""
