"""A model's review of a whole conversation's simulated user: every user turn with an error, its tags and one severity.

τ²-bench reviews its user simulator by reading a whole episode and naming the user turns that went wrong, each with
error tags and a severity. This does the same for this project, with its own prompt (`judges/prompts/user-review.md`):
the reviewer is shown the user's instructions (its scenario), the simulation guidelines the user was given, and the
conversation with every message numbered by its turn index (tool traffic shown as `fault_review.conversation_text`
shows it), and lists the user turns with an error. The vocabulary (tags, severities and what each means) is the kind's
(its views' fault detector, `FaultDetector.tags`...): nothing here knows a benchmark.

The reply must be one JSON object, `{"errors": [{"turn": <index>, "tags": [...], "severity": "...", "reason": "..."}],
"summary": "..."}`; nothing is fished out of prose. A tag or severity outside the vocabulary, or a turn that is not one
of the episode's user turns, makes the reply invalid; the model is shown what was wrong and asked again a bounded number
of times. A reply still invalid is an *unscored* review of every user turn, keeping the replies: never a label, never
clean. A user turn the reply does not list is reviewed clean.

The API the lab and the CLI call:

    await review_conversation(messages, instructions, guidelines, reviewer, vocabulary, *, backend=None, episode_id="",
                              termination=None)   # the episode's stored termination, e.g. "user_stop"
        -> ConversationReview   # .turns: one TurnReviewRow per user turn (tags, severity or None, reason, scored)

`reviewer` is a `ResolvedReviewer` (`fault_review.load_reviewer(spec)`: an agent spec or an LLM judge spec); `backend`
a started model (without one the reviewer's agent is started for this call). Its identity is
`user-review@<prompt version>:<served model>` (`reviewer_identity`), so a new prompt or model reviews afresh.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from testbed.backends.base import Backend, GenerateRequest
from testbed.control_tokens import ControlTokens
from testbed.judges.fault_review import ResolvedReviewer, conversation_text
from testbed.judges.fence import fence
from testbed.judges.parsing import json_object
from testbed.specs.files import read_text
from testbed.specs.loader import builtin_dir
from testbed.store.records import JudgeIdentity
from testbed.store.turn_reviews import TurnReviewRow
from testbed.templates import fill_slots
from testbed.transcript import Message, is_user

REVIEWER = "user-review"
"""The name whole-conversation reviews are stored under."""
PROMPT_VERSION = "user-review-1"
"""The version of `judges/prompts/user-review.md`: change it with the prompt, so old reviews stay apart."""
PROMPT_SLOTS = ("instructions", "guidelines", "tags", "severities", "conversation", "user_turns", "ending")
"""The slots the review prompt must hold."""
MIN_TOKENS = 1024
"""The fewest completion tokens a whole-conversation review is given (a judge spec's limit is sized for one turn)."""
MAX_REASON_CHARS = 200
"""A reason or summary is cut to this many characters."""
REPAIR = ('Your reply was not a valid review: {problem}. Reply again with only the JSON object '
          '{{"errors": [{{"turn": ..., "tags": [...], "severity": ..., "reason": ...}}], "summary": ...}}.')


@dataclass(frozen=True)
class ErrorVocabulary:
    """What a reviewer may say of a user turn: error tags and severities, each with what it means (a kind's detector's)."""

    tags: Mapping[str, str]
    """Each error tag → what it means, in the order the prompt lists them."""
    severities: Mapping[str, str]
    """Each severity → what it means."""


@dataclass(frozen=True)
class TurnError:
    """One user turn the reviewer says has an error."""

    turn: int
    tags: tuple[str, ...]
    severity: str
    reason: str


@dataclass(frozen=True)
class ConversationReview:
    """One episode's review: a row per user turn, and the reviewer's summary (or why it is unscored)."""

    episode_id: str
    turns: tuple[TurnReviewRow, ...]
    """One row per user turn of the episode, in turn order: tagged, clean (no tags) or unscored."""
    summary: str
    """The reviewer's one-line summary, or why the review is unscored."""

    @property
    def scored(self) -> bool:
        """False when the reply could not be read (every turn is then unscored)."""
        return all(t.scored for t in self.turns)

    @property
    def errors(self) -> list[TurnReviewRow]:
        """The user turns the reviewer tagged."""
        return [t for t in self.turns if t.tags]


class UnparsableUserReview(ValueError):
    """The reply is not a valid review; the message says what was wrong, for the retry prompt."""


def user_turns(messages: Sequence[Message]) -> list[int]:
    """The turn indexes of the user's messages (what it said and the tools it called): the turns a reviewer judges."""
    return [m.turn_index for m in messages if is_user(m)]


def review_schema(turns: Collection[int], vocabulary: ErrorVocabulary) -> dict:
    """The JSON schema a reply must follow, for structured output (`parse_user_review` checks the same strictly)."""
    error = {"type": "object", "additionalProperties": False, "required": ["turn", "tags", "severity", "reason"],
             "properties": {"turn": {"type": "integer", "enum": sorted(turns)},
                            "tags": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": list(vocabulary.tags)}},
                            "severity": {"type": "string", "enum": list(vocabulary.severities)},
                            "reason": {"type": "string", "maxLength": MAX_REASON_CHARS}}}
    return {"type": "object", "additionalProperties": False, "required": ["errors", "summary"],
            "properties": {"errors": {"type": "array", "items": error},
                           "summary": {"type": "string", "maxLength": MAX_REASON_CHARS}}}


def _line(text: object, what: str) -> str:
    if not isinstance(text, str):
        raise UnparsableUserReview(f"{what} is not a string")
    return " ".join(text.split())[:MAX_REASON_CHARS]


def _turn_error(item: object, turns: Collection[int], vocabulary: ErrorVocabulary) -> TurnError:
    if not isinstance(item, dict):
        raise UnparsableUserReview("each entry of `errors` must be an object with turn, tags, severity and reason")
    turn = item.get("turn")
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise UnparsableUserReview(f"`turn` must be the number of a USER turn ({', '.join(map(str, sorted(turns)))})")
    if turn not in turns:
        raise UnparsableUserReview(f"turn {turn} is not a USER turn; USER turns are {', '.join(map(str, sorted(turns)))}")
    tags = item.get("tags")
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        raise UnparsableUserReview(f"`tags` of turn {turn} must be a non-empty list of tags")
    tags = [t.strip().casefold() for t in tags]
    unknown = [t for t in tags if t not in vocabulary.tags]
    if unknown:
        raise UnparsableUserReview(f"{unknown[0]!r} (turn {turn}) is not a tag; tags are {', '.join(vocabulary.tags)}")
    severity = item.get("severity")
    if not isinstance(severity, str) or severity.strip().casefold() not in vocabulary.severities:
        raise UnparsableUserReview(f"`severity` of turn {turn} must be one of {', '.join(vocabulary.severities)}")
    return TurnError(turn, tuple(dict.fromkeys(tags)), severity.strip().casefold(), _line(item.get("reason", ""), f"`reason` of turn {turn}"))


def parse_user_review(reply: str, turns: Collection[int], vocabulary: ErrorVocabulary) -> tuple[list[TurnError], str]:
    """The user turns with an error (in turn order) and the summary of a reply that must be exactly one JSON object
    (optionally in a ```json block) naming only `turns`, with tags and severities of `vocabulary`; each turn at most once."""
    data = json_object(reply, UnparsableUserReview)
    errors = data.get("errors")
    if not isinstance(errors, list):
        raise UnparsableUserReview("`errors` must be a list (empty when no USER turn has an error)")
    found = [_turn_error(item, turns, vocabulary) for item in errors]
    seen: set[int] = set()
    for e in found:
        if e.turn in seen:
            raise UnparsableUserReview(f"turn {e.turn} is listed twice; give each USER turn once, with all its tags")
        seen.add(e.turn)
    return sorted(found, key=lambda e: e.turn), _line(data.get("summary", ""), "`summary`")


def ending_text(termination: str | None) -> str:
    """How the episode ended, in the words the reviewer reads (the end markers are stripped from the stored turns, so
    without this a reviewer could not tell that the user stopped)."""
    from testbed.loop.orchestrator import TerminationReason as T

    words = {T.USER_STOP: "the USER ended the conversation (it sent its stop signal after its last turn)",
             T.TRANSFER: "the USER said it was transferred to a human agent",
             T.AGENT_STOP: "the AGENT ended the conversation", T.MAX_STEPS: "the conversation was cut off at its step limit",
             T.MAX_TURNS: "the conversation was cut off at its turn limit",
             T.TOKEN_BUDGET: "the conversation was cut off at its token budget",
             T.TOO_MANY_ERRORS: "the conversation was cut off after too many failed tool calls",
             T.ASSISTANT_DONE: "the AGENT gave its final answer"}
    if not isinstance(termination, str) or not termination:
        return "not recorded"
    return words.get(termination, termination)


def _listing(meanings: Mapping[str, str]) -> str:
    return "\n".join(f"- {name}: {meaning}" for name, meaning in meanings.items())


def render_user_review_prompt(template: str, messages: Sequence[Message], instructions: str, guidelines: str,
                              vocabulary: ErrorVocabulary, tokens: ControlTokens, ending: str = "not recorded") -> str:
    """The prompt for one episode: instructions, guidelines and the whole conversation fenced (none of it is the
    reviewer's to obey), how it ended, the vocabulary listed with meanings, and the user turns it may name."""
    values = {"instructions": fence(tokens.neutralise(instructions), "INSTRUCTIONS"),
              "guidelines": fence(tokens.neutralise(guidelines), "GUIDELINES"),
              "tags": _listing(vocabulary.tags), "severities": _listing(vocabulary.severities),
              "conversation": fence(conversation_text(messages, tokens), "CONVERSATION"),
              "user_turns": ", ".join(map(str, user_turns(messages))) or "(none)", "ending": ending}
    return fill_slots(template, values, required=PROMPT_SLOTS)


def prompt_path() -> Path:
    """Where the review prompt lives: `judges/prompts/user-review.md` among the built-in specs."""
    return builtin_dir("judges") / "prompts" / "user-review.md"


def reviewer_identity(reviewer: ResolvedReviewer) -> JudgeIdentity:
    """`user-review`, the prompt version and the served model: whose reviews these are."""
    from testbed.backends.factory import served_model_name

    return JudgeIdentity(REVIEWER, PROMPT_VERSION, served_model_name(reviewer.agent.spec))


@dataclass
class ConversationReviewer:
    """Asks a model to review one conversation's user turns; retries a bounded number of times, else unscored.

    With a backend that honours JSON schemas the reply is constrained to the episode's schema (its own user turns);
    with others the format is only asked for and the reply parsed strictly. A retry shows the model its reply and what
    was wrong.
    """

    reviewer: ResolvedReviewer
    vocabulary: ErrorVocabulary
    backend: Backend

    @cached_property
    def template(self) -> str:
        """The review prompt as read from the repository."""
        return read_text(prompt_path(), what="user review prompt")

    @cached_property
    def tokens(self) -> ControlTokens:
        """The reviewer model's control tokens, neutralised in everything it is shown."""
        return ControlTokens.for_agent(self.reviewer.agent.spec)

    @property
    def identity(self) -> JudgeIdentity:
        """Whose reviews these are (`reviewer_identity`)."""
        return reviewer_identity(self.reviewer)

    async def review(self, messages: Sequence[Message], instructions: str, guidelines: str,
                     episode_id: str = "", termination: str | None = None) -> ConversationReview:
        """The review of one episode's user turns, told how it ended (its stored termination, `ending_text`); an episode
        without user turns has nothing to review (no rows, no call)."""
        turns = user_turns(messages)
        if not turns:
            return ConversationReview(episode_id, (), "no user turn to review")
        s = self.reviewer.settings
        prompt = [{"role": "user", "content": render_user_review_prompt(self.template, messages, instructions, guidelines,
                                                                        self.vocabulary, self.tokens,
                                                                        ending_text(termination))}]
        schema = {"name": "user_review", "schema": review_schema(turns, self.vocabulary), "strict": True}
        response_format = {"type": "json_schema", "json_schema": schema} if self.backend.capabilities.structured_output else None
        asked, replies = prompt, []
        for attempt in range(s.max_retries + 1):
            request = GenerateRequest(asked, temperature=s.temperature, max_tokens=max(s.max_tokens, MIN_TOKENS),
                                      response_format=response_format, seed=attempt)
            reply = (await self.backend.generate(request)).text
            replies.append(reply)
            try:
                errors, summary = parse_user_review(reply, turns, self.vocabulary)
            except UnparsableUserReview as exc:
                asked = [*prompt, {"role": "assistant", "content": self.tokens.neutralise(reply)},
                         {"role": "user", "content": REPAIR.format(problem=exc)}]
                continue
            tagged = {e.turn: e for e in errors}
            rows = tuple(TurnReviewRow(episode_id, t, tagged[t].tags, tagged[t].severity, tagged[t].reason, True, None, attempt + 1)
                         if t in tagged else TurnReviewRow(episode_id, t, attempts=attempt + 1) for t in turns)
            return ConversationReview(episode_id, rows, summary)
        return unscored(episode_id, turns, f"unparsable after {len(replies)} attempts", "\n---\n".join(replies), len(replies))


def unscored(episode_id: str, turns: Sequence[int], why: str, raw: str | None, attempts: int) -> ConversationReview:
    """An episode's review that has no verdict: every user turn unscored with `why`, keeping the replies."""
    return ConversationReview(episode_id, tuple(TurnReviewRow(episode_id, t, (), None, why, False, raw, attempts) for t in turns), why)


async def review_conversation(messages: Sequence[Message], instructions: str, guidelines: str, reviewer: ResolvedReviewer,
                              vocabulary: ErrorVocabulary, *, backend: Backend | None = None, episode_id: str = "",
                              termination: str | None = None) -> ConversationReview:
    """Review one episode's user turns (module docstring), told how it ended (`termination`, as the store keeps it):
    `backend` is the started reviewer model; without it the reviewer's agent is started for this call and stopped
    after. A backend error propagates (the caller decides whether it is an unscored review or the end of the work)."""
    if backend is not None:
        return await ConversationReviewer(reviewer, vocabulary, backend).review(messages, instructions, guidelines,
                                                                                episode_id, termination)
    from testbed.backends.factory import BackendPool

    async with BackendPool() as pool:
        started = await pool.backend_for(reviewer.agent.spec)
        return await ConversationReviewer(reviewer, vocabulary, started).review(messages, instructions, guidelines,
                                                                                episode_id, termination)
