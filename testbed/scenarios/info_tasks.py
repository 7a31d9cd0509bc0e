"""Information-gathering tasks: a masked request, the facts it hides, and the matchers that read them.

The assistant sees only a task's `request`; the simulated user holds its `facts` and may reveal a
fact only after the assistant has asked about it. Two matchers decide everything downstream:
`asked_facts` gates what the simulated user may reveal, and `mentioned_facts` scores what a text
(a user turn, the final output) contains. Both favour precision over recall, because a matcher
that fires on "Can you tell me more?" would let a lazy assistant collect every fact for free.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from testbed.specs.conversation import InfoGatheringScenarioSpec
from testbed.specs.errors import SpecError, cut, spec_error_from_validation
from testbed.specs.loader import builtin_dir, named_path, read_yaml

_PUNCTUATION = str.maketrans(
    {"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
     "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "}
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DIGIT_THEN_LETTER = re.compile(r"(?<=\d)(?=[^\W\d_])")


class HiddenFact(BaseModel):
    """One fact the simulated user knows and the assistant must ask for.

    `aliases` say that a text contains the fact (scoring, leak checks); `cues` say that a question
    is about it (the reveal gate). Both are lowercase phrases matched as whole words.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    topic: str = Field(min_length=1)
    value: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    aliases: list[str] = Field(min_length=1)
    cues: list[str] = Field(min_length=1)

    @field_validator("aliases", "cues")
    @classmethod
    def _lowercase_phrases(cls, value: list[str]) -> list[str]:
        for phrase in value:
            if not re.search(r"\w", phrase):
                raise ValueError(f"phrase {phrase!r} has no letter or digit | fix: give a word or number")
            if phrase != phrase.lower() or phrase != phrase.strip():
                raise ValueError(f"phrase {phrase!r} is not lowercase and trimmed | fix: write it as {phrase.strip().lower()!r}")
        if len(set(value)) != len(value):
            raise ValueError("phrases repeat | fix: list each phrase once")
        return value


class InfoTask(BaseModel):
    """A task whose key facts are hidden: what the assistant sees, and what the user knows.

    `full_request` is the request with every fact filled in: the upper bound a fully informed
    assistant would get, and a check that the aliases recognise natural wording.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    domain: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    request: str = Field(min_length=1)
    full_request: str = Field(min_length=1)
    facts: list[HiddenFact] = Field(min_length=3, max_length=6)

    @model_validator(mode="after")
    def _consistent(self) -> InfoTask:
        ids = [fact.id for fact in self.facts]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"@facts task {self.id!r} repeats fact id {repeated[0]!r} | fix: give every fact of a task its own id")
        leaked = mentioned_facts(self.request, self)
        if leaked:
            fact = next(f for f in self.facts if f.id in leaked)
            request = _normalize(self.request)
            alias = next(a for a in fact.aliases if re.search(_phrase_pattern(a), request, re.IGNORECASE))
            raise ValueError(
                f"@request masked request of task {self.id!r} leaks fact {fact.id!r} (alias {alias!r})"
                " | fix: remove the fact from `request`, or make the alias more specific"
            )
        return self


class InfoTaskSet(BaseModel):
    """A versioned collection of information-gathering tasks, as stored in one YAML file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = Field(ge=1)
    tasks: list[InfoTask] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, value: list[InfoTask]) -> list[InfoTask]:
        ids = [task.id for task in value]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"task id {repeated[0]!r} is used more than once | fix: give every task its own id")
        return value

    def by_id(self, task_id: str) -> InfoTask:
        """The task with this id; episodes and logs refer to tasks by id only."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(f"no info-gathering task {task_id!r}")


def builtin_task_path() -> Path:
    """Where the shipped task set lives, inside the wheel or at the checkout's top level."""
    return builtin_dir("scenarios") / "tasks" / "info-gathering.yaml"


def load_task_set(path: Path | None = None, *, named_by: tuple[Path, str] | None = None) -> InfoTaskSet:
    """Load and validate a task set (default: the built-in one), raising SpecError on a bad file.

    `named_by` is the scenario and field that name the file, where a missing or unreadable file is reported.
    """
    path = Path(path) if path is not None else builtin_task_path()
    try:
        return InfoTaskSet.model_validate(read_yaml(path, named_by=named_by, what="task file"))
    except ValidationError as exc:
        raise spec_error_from_validation(path, exc, InfoTaskSet) from None


def resolve_task_set(path: Path, spec: InfoGatheringScenarioSpec, user_prompt: str | None) -> dict[str, InfoTaskSet]:
    """The information-gathering resolve hook: the spec's task set (or the built-in one), domains checked.

    Named by the kind's entry (testbed.scenarios.info_gathering.KIND); read at load time, so an unknown domain or a bad task file fails before
    any model call and the tasks are stored with the run.
    """
    if spec.tasks_file is not None:
        task_set = load_task_set(named_path(path, spec.tasks_file), named_by=(path, "tasks_file"))
    else:
        task_set = load_task_set()
    if spec.domains:
        known = {t.domain for t in task_set.tasks}
        unknown = sorted(set(spec.domains) - known)
        if unknown:
            raise SpecError(path, "domains", f"unknown domains {cut(unknown)}", f"use some of {', '.join(sorted(known))}")
    return {"task_set": task_set}


def mentioned_facts(text: str, task: InfoTask) -> set[str]:
    """Ids of the task's facts that `text` states: any alias present as a whole word or phrase.

    Matching ignores case and tolerates punctuation: "$800", "800€" and "1,200" match the aliases
    "800" and "1200", while "1800", "8000" and "8.5" do not match "800" or "8". Curly quotes and
    dashes count as straight ones, hyphens as spaces, and a word alias also matches its plural.
    """
    normalized = _normalize(text)
    return {fact_id for fact_id, pattern in _alias_matchers(task) if pattern.search(normalized)}


def asked_facts(question: str, task: InfoTask) -> set[str]:
    """Ids of the task's facts that the assistant's message asks about.

    Only question sentences count (see `question_sentences`); one asks about a fact when it holds
    one of the fact's cues or aliases. A generic "Can you tell me more?" names no cue and so asks
    about nothing: the simulated user must not reveal facts the assistant never asked for.
    """
    asked: set[str] = set()
    matchers = _ask_matchers(task)
    for sentence in question_sentences(question):
        normalized = _normalize(sentence)
        asked.update(fact_id for fact_id, pattern in matchers if pattern.search(normalized))
    return asked


def question_sentences(text: str) -> list[str]:
    """The sentences of `text` that ask something, in order.

    A sentence asks when it ends with "?" or opens with a question or request form ("Could you
    tell me", "Please share", "Let me know", "Do you", "Is there"; also after a leading clause,
    as in "Before I start, could you..."). Without a "?", a wh-word counts only in question word
    order ("What is your budget.") so that "When you arrive, take the tram." is not a question,
    and a closing offer without "?" ("Let me know if you'd like any changes.") asks nothing.
    """
    sentences = (s.strip() for s in _SENTENCE_BREAK.split(_normalize(text)))
    return [s for s in sentences if s and _is_question(s)]


def count_questions(text: str) -> int:
    """How many question sentences a message holds; a cost measure for scoring episodes."""
    return len(question_sentences(text))


_SENTENCE_BREAK = re.compile(r"(?<=[.?!])[\"')\]*_]*\s+|\n+")
_LIST_MARKER = re.compile(r"^(?:[\s>*#\-]+|\(?\d+[.)]\s+|[a-z][.)]\s+)+")
_TRAILING = "\"')]*_ \t"
_SUBJECT = r"(?:you|your|i|we|it|there|they|this|that|these|those|the|a|an|any|anyone|he|she|my|our)"
_AUX = (
    rf"(?:(?:do|does|did|are|is|was|will|would|could|can|may|might|have|has)\s+{_SUBJECT}"
    r"|should\s+(?:i|we|it|the)|shall\s+(?:i|we))"
)
_REQUEST = (
    r"(?:please\s+(?:share|tell|let|provide|specify|confirm|describe|clarify|give|send|list|mention|include|indicate|advise|explain)"
    r"|let\s+me\s+know|tell\s+me|mind\s+sharing|any\s+chance"
    r"|i(?:'d|\s+would)(?:\s+also)?\s+(?:like|love)\s+to\s+(?:know|hear|ask|check|confirm)"
    r"|i(?:'ll|\s+will)?\s+(?:also\s+)?need\s+to\s+know|i'm\s+(?:curious|wondering)|i\s+was\s+wondering|i\s+wonder"
    r"|it\s+would\s+help\s+(?:to\s+know|if\s+you)|it'd\s+help)"
)
_WH = r"(?:what|which|when|where|who|whom|whose|why|how)"
_WH_INVERTED = (
    rf"(?:(?:what|when|where|who|how)'s|{_WH}(?:\s+(?!(?:you|i|we|they|he|she|it)\b)[\w'-]+){{0,2}}?"
    r"\s+(?:is|are|was|were|do|does|did|will|would|can|could|should|have|has))"
)
_OFFER = re.compile(
    r"\b(?:if|whether)\s+you(?:'d|\s+would)?\s+(?:want|like|need|prefer)\s+"
    r"(?:me\s+to|any|anything|more|changes|adjustments|tweaks|another|a\s+different)\b|\bfeel\s+free\b",
    re.IGNORECASE,
)
_OPENING = re.compile(rf"^(?:{_AUX}|{_REQUEST}|{_WH_INVERTED})\b", re.IGNORECASE)
_AFTER_CLAUSE = re.compile(rf"[,;:-]\s*(?:{_AUX}|{_REQUEST}|(?:what|how)'s|(?:what|how)\s+(?:is|are|do|does|did|would|will))\b", re.IGNORECASE)


def _is_question(sentence: str) -> bool:
    if sentence.rstrip(_TRAILING).endswith("?"):
        return True
    body = _LIST_MARKER.sub("", sentence)
    return not _OFFER.search(body) and bool(_OPENING.match(body) or _AFTER_CLAUSE.search(body))


def _normalize(text: str) -> str:
    return _THOUSANDS.sub("", text.translate(_PUNCTUATION))


def _phrase_pattern(phrase: str) -> str:
    tokens = [t for t in re.split(r"[\s\-]+", _normalize(phrase).strip()) if t]
    pattern = ""
    for index, token in enumerate(tokens):
        if index:
            glue = r"[\s,\-]*" if tokens[index - 1][-1].isdigit() and token[0].isalpha() else r"[\s,\-]+"
            pattern += glue
        pattern += r"\s*".join(re.escape(piece) for piece in _DIGIT_THEN_LETTER.split(token))
    first, last = tokens[0][0], tokens[-1][-1]
    head = r"(?<!\w)(?<!\d[.,])" if re.match(r"\w", first) else ""
    plural = r"(?:e?s)?" if last.isalpha() else ""
    tail = r"(?!\w)(?![.,]\d)" if re.match(r"\w", last) else ""
    return head + pattern + plural + tail


@lru_cache(maxsize=4096)
def _compile_phrases(facts: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    compiled = []
    for fact_id, phrases in facts:
        ordered = sorted(phrases, key=len, reverse=True)
        compiled.append((fact_id, re.compile("|".join(f"(?:{_phrase_pattern(p)})" for p in ordered), re.IGNORECASE)))
    return tuple(compiled)


def _alias_matchers(task: InfoTask) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return _compile_phrases(tuple((fact.id, tuple(fact.aliases)) for fact in task.facts))


def _ask_matchers(task: InfoTask) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return _compile_phrases(tuple((fact.id, (*fact.cues, *fact.aliases)) for fact in task.facts))
