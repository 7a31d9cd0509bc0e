"""An LLM judge: a prompt bound to a model through any backend, structured output where possible."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.backends.base import Backend, BackendError, GenerateRequest
from testbed.judges.parsing import UnparsableVerdict, parse_verdict
from testbed.judges.prompting import render_prompt, verdict_schema
from testbed.judges.specs import ResolvedJudge
from testbed.judges.verdict import JudgeInput, Verdict

REPAIR = "Your reply was not a valid verdict: {problem}. Reply again with only the JSON object."


@dataclass
class LLMJudge:
    """Asks a model for a verdict; retries a bounded number of times; otherwise the turn is unscored.

    With a backend that honours JSON schemas the reply is constrained to the verdict schema; with
    others the schema is only described in the prompt and the reply is parsed strictly. A retry
    shows the model its previous reply and what was wrong with it.
    """

    judge: ResolvedJudge
    backend: Backend

    @property
    def name(self) -> str:
        """The judge's name, as stored with its labels."""
        return self.judge.spec.name

    @property
    def version(self) -> str:
        """The prompt version, as stored with the labels."""
        return self.judge.spec.prompt_version or "unversioned"

    async def judge_turn(self, item: JudgeInput) -> tuple[Verdict, int]:
        """The verdict on one turn and the number of model calls it took."""
        spec = self.judge.spec
        assert self.judge.prompt is not None
        messages = [{"role": "user", "content": render_prompt(self.judge.prompt, item)}]
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
                messages = [*messages[:1], {"role": "assistant", "content": completion.text},
                            {"role": "user", "content": REPAIR.format(problem=exc)}]
        raw = "\n---\n".join(replies)
        return Verdict(None, None, f"unparsable after {len(replies)} attempts", raw), len(replies)


__all__ = ["LLMJudge", "BackendError"]
