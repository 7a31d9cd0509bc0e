"""Judge specs (`judges/*.yaml`): which task, which prompt and version, which model by default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from testbed.specs.agent import Strict
from testbed.specs.errors import SpecError, cut_text, spec_error_from_validation
from testbed.specs.files import read_text
from testbed.specs.loader import ResolvedAgent, load_agent, named_path, read_yaml, resolve_spec_path
from testbed.judges.builtin import builtin_judges
from testbed.specs.registries import JUDGE_KINDS, KINDS, registered

JudgeKind = registered(JUDGE_KINDS)
"""A judge kind: one of those registered in `testbed.specs.registries.JUDGE_KINDS`."""

PROMPT_SLOTS = ("question", "answer", "user_turn")
"""Slots every judge prompt must hold, as `render_prompt` fills them."""


class JudgeSpec(Strict):
    """A judge of a kind registered in JUDGE_KINDS: `local` (the deterministic classifier) or `llm`
    (a prompt bound to a model). The fields a kind requires are declared with it.

    `task: followup` asks for the binary verdict only; `task: failure_modes` asks for one of the
    eight labels, from which the follow-up verdict follows. The label set and its definitions come
    from `labels.yaml`, never from the spec, so prompts, classifier and report cannot disagree.
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: JudgeKind
    task: Literal["followup", "failure_modes"]
    description: str = ""
    prompt_file: Path | None = None
    prompt_version: str | None = None
    model_file: Path | None = None
    """A trained judge's model (the `learned` kind), relative to the spec file."""
    first_reply_model_file: Path | None = None
    """For the `learned` kind: another model for turns with no conversation before them (a first reply), relative
    to the spec file; `model_file` then judges only turns that have one (`testbed.judges.learned.routed`)."""
    first_reply_kinds: list[str] | None = None
    """With `first_reply_model_file`: the scenario kinds whose first replies that model judges (a first reply of
    another kind goes to `model_file`; one whose kind is not known, to the first-reply model). Unset: every kind."""
    agent: str | None = None
    max_retries: int = Field(2, ge=0, le=10)
    max_tokens: int = Field(160, ge=16, le=8192)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    concurrency: int = Field(16, ge=1, le=4096)

    @model_validator(mode="after")
    def _llm_fields(self) -> "JudgeSpec":
        entry = JUDGE_KINDS.entry(self.kind)
        for field in entry.requires:
            if getattr(self, field) is None:
                article = entry.article
                raise ValueError(f"@{field} {article} {self.kind} judge needs {field} | fix: add {field}: to the judge spec")
        if self.first_reply_kinds is not None:
            if self.first_reply_model_file is None:
                raise ValueError("@first_reply_kinds names whose first replies the first-reply model judges, and there is no "
                                 "first_reply_model_file | fix: add first_reply_model_file:, or drop first_reply_kinds")
            fix = f"fix: name scenario kinds among {', '.join(KINDS.names())}"
            if not self.first_reply_kinds:
                raise ValueError(f"@first_reply_kinds is empty | {fix}")
            unknown = [k for k in self.first_reply_kinds if k not in KINDS.names()]
            if unknown:
                raise ValueError(f"@first_reply_kinds unknown scenario kind {unknown[0]!r} | {fix}")
        return self


@dataclass(frozen=True)
class ResolvedJudge:
    """A judge spec with its prompt read and its model bound (the spec's agent or an override)."""

    spec: JudgeSpec
    path: Path
    prompt: str | None
    agent: ResolvedAgent | None


def load_judge(ref: str | Path, *, model: str | Path | None = None) -> ResolvedJudge:
    """Load a judge by built-in name (`builtin_judges`: `local`, `learned`, `followup`, ...) or path; `model` rebinds
    its agent."""
    try:
        path = resolve_spec_path(ref, "judges")
    except FileNotFoundError as exc:
        raise SpecError(str(ref), "judge", str(exc), f"use {', '.join(builtin_judges())} or a judge spec path") from None
    try:
        spec = JudgeSpec.model_validate(read_yaml(path))
    except ValidationError as exc:
        raise spec_error_from_validation(path, exc, JudgeSpec) from None
    for field in ("model_file", "first_reply_model_file"):
        named = getattr(spec, field)
        if named is not None and not named_path(path, named).is_file():
            raise SpecError(path, field, f"no trained model at {cut_text(str(named_path(path, named)), 200)}",
                            "train it with python scripts/train_judge.py, or fix the path")
    if not JUDGE_KINDS.entry(spec.kind).prompted:
        return ResolvedJudge(spec, path, None, None)
    assert spec.prompt_file is not None and spec.agent is not None
    prompt = read_text(named_path(path, spec.prompt_file), named_by=(path, "prompt_file"), what="prompt file")
    missing = [slot for slot in PROMPT_SLOTS if "{" + slot + "}" not in prompt]
    if missing:
        slot = "{" + missing[0] + "}"
        raise SpecError(path, "prompt_file", f"prompt file {cut_text(str(spec.prompt_file), 200)} lacks the slot {slot}",
                        f"add {slot} where it goes; a judge prompt needs {', '.join('{' + s + '}' for s in PROMPT_SLOTS)}")
    try:
        agent = load_agent(model, relative_to=None) if model is not None else load_agent(spec.agent, relative_to=path.parent)
    except FileNotFoundError as exc:
        raise SpecError(path if model is None else str(model), "agent", str(exc), "point --model at an agent spec") from None
    return ResolvedJudge(spec, path, prompt, agent)
