"""Perturbations of the assistant answer as the simulated user sees it, with their parameters.

A scenario lists perturbations by name (`none`, `truncation`, `explicit_question`) or as a
mapping with parameters: `{kind: truncation, fraction: 0.25}`, `{kind: explicit_question, text:
"Any questions?"}`, or `texts: [..]` for one perturbation per text. Each gets a *label*, the
value of the episode's `perturbation` column: the plain name for the default parameters, else the
name with the parameter (`truncation@0.25`, `explicit_question:any-questions`), or `label:` when given.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_serializer, model_validator

from testbed.specs.agent import Strict

PerturbationName = Literal["none", "truncation", "explicit_question"]
EXPLICIT_QUESTION = "What do you think? Do you have any questions?"
DEFAULT_FRACTION = 0.5
_LABEL = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$"


class PerturbationSpec(Strict):
    """One perturbation with its parameters: truncation keeps `fraction` of the answer; an explicit question appends `text`."""

    kind: PerturbationName
    fraction: float | None = Field(None, gt=0.0, lt=1.0)
    text: str | None = Field(None, min_length=1)
    texts: list[str] | None = Field(None, min_length=1)
    label: str | None = Field(None, pattern=_LABEL)

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: object) -> object:
        return {"kind": data} if isinstance(data, str) else data

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        """A perturbation with no parameters dumps as its bare name, as written (spec hashes stay as they were)."""
        if self.fraction is None and self.text is None and self.texts is None and self.label is None:
            return self.kind
        return handler(self)

    @model_validator(mode="after")
    def _parameters_fit_the_kind(self) -> "PerturbationSpec":
        if self.fraction is not None and self.kind != "truncation":
            raise ValueError(f"@fraction only truncation takes a fraction, not {self.kind} | fix: drop fraction")
        if (self.text is not None or self.texts is not None) and self.kind != "explicit_question":
            raise ValueError(f"@text only explicit_question takes a text, not {self.kind} | fix: drop text/texts")
        if self.text is not None and self.texts is not None:
            raise ValueError("@texts give text or texts, not both | fix: keep texts: [..]")
        if self.texts is not None and self.label is not None:
            raise ValueError("@label one label cannot name several texts | fix: list one entry per text, each with its label")
        return self

    def expanded(self) -> list["PerturbationSpec"]:
        """One spec per text when `texts` lists several, else this one."""
        if self.texts is None:
            return [self]
        return [PerturbationSpec(kind=self.kind, text=t) for t in self.texts]

    @property
    def resolved_label(self) -> str:
        """The label stored in the episode's `perturbation` column."""
        if self.label is not None:
            return self.label
        if self.kind == "truncation" and self.fraction not in (None, DEFAULT_FRACTION):
            return f"truncation@{self.fraction:g}"
        if self.kind == "explicit_question" and self.text not in (None, EXPLICIT_QUESTION):
            slug = "-".join(re.findall(r"[a-z0-9]+", self.text.casefold())[:4]) or "text"
            return f"explicit_question:{slug}"
        return self.kind

    def identity(self) -> object:
        """What enters an episode id: the bare name for default parameters (ids stay as before), else every parameter."""
        if self.label is None and self.fraction in (None, DEFAULT_FRACTION) and self.text in (None, EXPLICIT_QUESTION):
            return self.kind
        return [self.resolved_label, self.kind, self.fraction, self.text]

    def apply(self, answer: str) -> str:
        """The answer as the simulated user sees it.

        `truncation` keeps the first `fraction` (default half), cut at a word boundary, so a reader
        should ask to finish; `explicit_question` appends a direct question, which invites a reply.
        """
        if self.kind == "none":
            return answer
        if self.kind == "truncation":
            head = answer[: int(len(answer) * (self.fraction or DEFAULT_FRACTION))]
            cut = head.rsplit(" ", 1)[0] if " " in head else head
            return cut.rstrip()
        return f"{answer.rstrip()}\n\n{self.text or EXPLICIT_QUESTION}"


PerturbationEntry = PerturbationSpec
"""How a scenario lists one perturbation: a bare name or a mapping with parameters, both read as a PerturbationSpec."""


def perturbation_specs(entries: list[PerturbationEntry | str]) -> list[PerturbationSpec]:
    """The entries as specs, `texts` expanded, in order; ValueError when two share a label."""
    out = [p for e in entries for p in PerturbationSpec.model_validate(e).expanded()]
    labels = [p.resolved_label for p in out]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"perturbation labels repeat: {', '.join(repeated)} | fix: list each once, or give each its own label")
    return out
