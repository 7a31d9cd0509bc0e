"""A model's review of one flagged simulated-user fault: did the flagged behaviour *hinder* the agent, or was it harmless?

A benchmark's own reviews of saved runs (τ²-bench's) give each user error a severity: whether it kept the agent from
the task. A kind's rules flag faults cheaply and conservatively (its views' fault detector, which also says what each
kind of fault means); this asks a model about those flagged turns only, showing it the conversation up to and including the flagged turn, the
fault's kind with what it means, and the rule's evidence (`judges/prompts/fault-review.md`). The reply must
be one JSON object, `{"verdict": "hindered" | "harmless", "reason": "<one line>"}`; nothing is fished out of
prose. A reply that is not one after the retries is an *unscored* review keeping the replies, never a verdict.

The reviewer is named by an agent spec, or by an LLM judge spec whose agent, retries, temperature, token
limit and concurrency it takes (its prompt is not used: a review has its own). Its identity is
`fault-review@<prompt version>:<served model>`, so a new prompt or model reviews afresh and a rerun resumes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from testbed.backends.base import Backend, BackendError, BackendUnavailable, GenerateRequest
from testbed.concurrency import gather_or_cancel
from testbed.control_tokens import ControlTokens
from testbed.judges.fence import fence
from testbed.judges.parsing import json_object
from testbed.specs.errors import SpecError
from testbed.specs.files import read_text
from testbed.specs.loader import ResolvedAgent, builtin_dir, load_agent, read_yaml, resolve_spec_path
from testbed.store.fault_reviews import VERDICTS, FaultReviewRow
from testbed.store.records import JudgeIdentity
from testbed.templates import fill_slots
from testbed.transcript import Message, is_assistant, is_system, is_tool

REVIEWER = "fault-review"
"""The name reviews are stored under."""
PROMPT_VERSION = "fault-review-1"
"""The version of `judges/prompts/fault-review.md`: change it with the prompt, so old reviews stay apart."""
PROMPT_SLOTS = ("kind", "meaning", "evidence", "turn", "conversation")
"""The slots the review prompt must hold."""
MAX_MESSAGE_CHARS = 2000
"""Longer messages (a tool result listing a whole record) are cut to this many characters in the prompt."""
REPAIR = 'Your reply was not a valid review: {problem}. Reply again with only the JSON object {{"verdict": ..., "reason": ...}}.'

OnReview = Callable[[int, FaultReviewRow], None]
"""Called as `(index, review)` the moment each review is known."""


@dataclass(frozen=True)
class FlaggedFault:
    """One fault a rule flagged on a user turn: what a reviewer is asked about."""

    episode_id: str
    turn_index: int
    kind: str
    evidence: str
    meaning: str = ""
    """What the fault kind means, in the words the reviewer reads (its detector's `meanings`)."""

    @property
    def key(self) -> tuple[str, int, str]:
        """Episode, turn and kind: what a stored review is found by."""
        return (self.episode_id, self.turn_index, self.kind)


@dataclass(frozen=True)
class ReviewSettings:
    """How the reviewer asks: retries after an unreadable reply, sampling, and how many reviews at once."""

    max_retries: int = 2
    max_tokens: int = 160
    temperature: float = 0.0
    concurrency: int = 16


class UnparsableReview(ValueError):
    """The reply is not a valid review; the message says what was wrong, for the retry prompt."""


def review_schema() -> dict:
    """The JSON schema a reply must follow, for structured output and for strict parsing."""
    props = {"verdict": {"type": "string", "enum": list(VERDICTS)}, "reason": {"type": "string", "maxLength": 200}}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def parse_review(reply: str) -> tuple[str, str]:
    """The verdict and one-line reason of a reply that must be exactly one JSON object (optionally in a ```json block)."""
    data = json_object(reply, UnparsableReview)
    verdict, reason = data.get("verdict"), data.get("reason", "")
    if not isinstance(verdict, str) or verdict.strip().casefold() not in VERDICTS:
        raise UnparsableReview(f"`verdict` must be one of {', '.join(VERDICTS)}")
    if not isinstance(reason, str):
        raise UnparsableReview("`reason` is not a string")
    return verdict.strip().casefold(), " ".join(reason.split())[:200]


def conversation_text(messages: Sequence[Message], tokens: ControlTokens) -> str:
    """The conversation as the reviewer reads it: one numbered line per message, tool calls and results named, long
    messages cut, system messages left out (the reviewer sees what was said, not what either side was told)."""
    lines = []
    for m in messages:
        if is_system(m):
            continue
        who = "AGENT" if is_assistant(m) else m.role.upper()
        if is_tool(m) and m.tool_result is not None:
            r = m.tool_result
            side = "AGENT" if r.requestor == "assistant" else "USER"
            lines.append(f"[{m.turn_index}] TOOL {'ERROR' if r.error else 'RESULT'} for the {side} ({r.name}): {_cut(m.content)}")
            continue
        if m.content or not m.tool_calls:
            lines.append(f"[{m.turn_index}] {who}: {_cut(m.content)}")
        lines += [f"[{m.turn_index}] {who} calls {c.name}({_cut(c.arguments)})" for c in m.tool_calls]
    return tokens.neutralise("\n".join(lines))


def _cut(text: str) -> str:
    extra = len(text) - MAX_MESSAGE_CHARS
    return text if extra <= 0 else f"{text[:MAX_MESSAGE_CHARS]}… ({extra} more characters)"


def render_review_prompt(template: str, messages: Sequence[Message], fault: FlaggedFault, tokens: ControlTokens) -> str:
    """The prompt for one fault: the conversation up to and including the flagged turn, fenced, with the kind, its meaning
    and the evidence (fenced too: it is the user's own words)."""
    shown = [m for m in messages if m.turn_index <= fault.turn_index]
    values = {"kind": fault.kind, "meaning": fault.meaning or "a fault of the simulated user",
              "evidence": fence(tokens.neutralise(fault.evidence), "EVIDENCE"), "turn": str(fault.turn_index),
              "conversation": fence(conversation_text(shown, tokens), "CONVERSATION")}
    return fill_slots(template, values, required=PROMPT_SLOTS)


def prompt_path() -> Path:
    """Where the review prompt lives: `judges/prompts/fault-review.md` among the built-in specs."""
    return builtin_dir("judges") / "prompts" / "fault-review.md"


@dataclass(frozen=True)
class ResolvedReviewer:
    """The reviewer's model (an agent spec) and how to ask it."""

    agent: ResolvedAgent
    settings: ReviewSettings


def load_reviewer(ref: str | Path) -> ResolvedReviewer:
    """The reviewer a `--judge` names: an LLM judge spec (a YAML with `kind: llm`: its agent and settings) or an agent
    spec (default settings, its own concurrency); SpecError when it is neither or is another kind of judge."""
    from testbed.judges.specs import load_judge

    try:
        path = resolve_spec_path(ref, "judges")
    except FileNotFoundError:
        path = None
    if path is not None and "kind" in read_yaml(path):
        judge = load_judge(path)
        if judge.agent is None:
            raise SpecError(path, "kind", f"a {judge.spec.kind} judge has no model to review faults with",
                            "name an LLM judge spec (kind: llm) or an agent spec")
        s = judge.spec
        return ResolvedReviewer(judge.agent, ReviewSettings(s.max_retries, s.max_tokens, s.temperature, s.concurrency))
    try:
        agent = load_agent(ref)
    except FileNotFoundError as exc:
        raise SpecError(str(ref), "judge", str(exc), "name an agent spec or an LLM judge spec") from None
    return ResolvedReviewer(agent, ReviewSettings(concurrency=agent.spec.concurrency))


@dataclass
class FaultReviewer:
    """Asks a model whether each flagged fault hindered the agent; retries a bounded number of times, else unscored.

    With a backend that honours JSON schemas the reply is constrained to the review schema; with others the
    format is only asked for and the reply parsed strictly. A retry shows the model its reply and what was wrong.
    """

    reviewer: ResolvedReviewer
    backend: Backend | None = None
    """The model to ask; None means the reviewer's agent, started by `review_all` for the call."""

    @cached_property
    def template(self) -> str:
        """The review prompt as read from the repository."""
        return read_text(prompt_path(), what="fault review prompt")

    @cached_property
    def tokens(self) -> ControlTokens:
        """The reviewer model's control tokens, neutralised in everything it is shown."""
        return ControlTokens.for_agent(self.reviewer.agent.spec)

    @property
    def identity(self) -> JudgeIdentity:
        """`fault-review`, the prompt version and the served model: whose reviews these are."""
        from testbed.backends.factory import served_model_name

        return JudgeIdentity(REVIEWER, PROMPT_VERSION, served_model_name(self.reviewer.agent.spec))

    async def review(self, messages: Sequence[Message], fault: FlaggedFault) -> FaultReviewRow:
        """The review of one fault, given its episode's messages (those after the flagged turn are not shown)."""
        assert self.backend is not None, "review needs a bound backend"
        s = self.reviewer.settings
        prompt = [{"role": "user", "content": render_review_prompt(self.template, messages, fault, self.tokens)}]
        structured = self.backend.capabilities.structured_output
        schema = {"name": "fault_review", "schema": review_schema(), "strict": True}
        response_format = {"type": "json_schema", "json_schema": schema}
        asked, replies = prompt, []
        for attempt in range(s.max_retries + 1):
            request = GenerateRequest(asked, temperature=s.temperature, max_tokens=s.max_tokens,
                                      response_format=response_format if structured else None, seed=attempt)
            reply = (await self.backend.generate(request)).text
            replies.append(reply)
            try:
                verdict, reason = parse_review(reply)
            except UnparsableReview as exc:
                asked = [*prompt, {"role": "assistant", "content": self.tokens.neutralise(reply)},
                         {"role": "user", "content": REPAIR.format(problem=exc)}]
                continue
            return FaultReviewRow(*fault.key, fault.evidence, verdict, reason, reply, attempt + 1)
        unread = f"unparsable after {len(replies)} attempts"
        return FaultReviewRow(*fault.key, fault.evidence, None, unread, "\n---\n".join(replies), len(replies))

    async def review_all(self, items: Sequence[tuple[Sequence[Message], FlaggedFault]],
                         on_review: OnReview | None = None) -> list[FaultReviewRow]:
        """Reviews of (messages, fault) items, in order, at most `concurrency` at once; `on_review(i, row)` sees each
        as it arrives. A call that fails for good is an unscored review with the reason; an unreachable server
        (BackendUnavailable) stops the lot. Without a bound backend the agent is started for this call and stopped after."""
        from testbed.backends.factory import BackendPool

        async with BackendPool() as pool:
            bound = self if self.backend is not None else replace(self, backend=await pool.backend_for(self.reviewer.agent.spec))
            gate = asyncio.Semaphore(self.reviewer.settings.concurrency)

            async def one(i: int, messages: Sequence[Message], fault: FlaggedFault) -> FaultReviewRow:
                async with gate:
                    try:
                        row = await bound.review(messages, fault)
                    except BackendUnavailable:
                        raise
                    except BackendError as exc:
                        row = FaultReviewRow(*fault.key, fault.evidence, None, f"review call failed: {exc.reason}", None, 0)
                if on_review is not None:
                    on_review(i, row)
                return row

            return await gather_or_cancel(one(i, m, f) for i, (m, f) in enumerate(items))
