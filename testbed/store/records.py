"""Plain records the store writes and reads, independent of how episodes were produced or judged.

Write records (`EpisodeKey`, `EpisodeOutcome`, `SharedAnswer`, `LabelRow`) are what producers hand
to the store; read records (`RunRecord`, `EpisodeRecord`, `TurnRecord`, `LabelRecord`,
`FailedAttempt`) are what the store gives back, so that no caller needs to know its tables.
Messages are read back as `testbed.transcript.Message`, the type they were written as.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from testbed.specs.registries import default_framework
from testbed.conversation_context import Earlier
from testbed.transcript import Message, Usage

CONDITIONS = ["assistant_model", "user_model", "dataset", "user_mode", "temperature", "perturbation"]
"""The episode columns that say under which conditions an episode was generated: what reports group by."""


@dataclass(frozen=True, slots=True)
class EpisodeKey:
    """What identifies an episode and the conditions it was generated under."""

    episode_id: str
    """Stable hash of everything that made the episode: a rerun of the same spec finds it by this id."""
    item_id: str
    """The dataset item (or task) the episode is about."""
    dataset: str
    """Name of the dataset the item came from."""
    assistant_agent: str
    """Name of the assistant's agent spec."""
    assistant_model: str
    """Model name the assistant's server reports, so runs on different servers compare by model."""
    user_agent: str
    """Name of the simulated user's agent spec."""
    user_model: str
    """Model name the simulated user's server reports."""
    user_mode: str
    """How the simulated user was prompted (e.g. `raw` continuation or `instructed`)."""
    temperature: float
    """Sampling temperature of the simulated user."""
    sample_index: int
    """Which of several samples at the same temperature this is (0-based)."""
    perturbation: str
    """The perturbation applied to the answer the user saw (`none` when unperturbed)."""


@dataclass(frozen=True)
class EpisodeReward:
    """A task's outcome as its benchmark's evaluator scored it (τ²: database, actions, information communicated)."""

    reward: float
    """The reward in [0, 1]; the product of the breakdown's parts under the task's reward basis."""
    breakdown: dict[str, float]
    """Each scored part's reward (e.g. DB, ACTION, COMMUNICATE)."""
    details: dict[str, Any]
    """What the evaluator checked: expected actions matched or not, information found or not."""


@dataclass(frozen=True)
class EpisodeOutcome:
    """A finished episode: its messages, or the reason it failed. Written in one transaction."""

    key: EpisodeKey
    """Its id and the conditions it was generated under."""
    messages: list[Message]
    """Every message, in turn order (for an error, those written before it failed)."""
    status: str
    """`done` or `error`."""
    termination: str | None = None
    """Why the conversation stopped."""
    error_reason: str | None = None
    """Why it failed; redacted before it is stored."""
    task_score: float | None = None
    """The assistant's task score, when the item can be scored."""
    usage: Usage = Usage()
    """Tokens and time generated in the episode."""
    wire: tuple["WireRecord", ...] = ()
    """Every request sent to a model in the episode, attributed to turns (empty when the run kept no wire log)."""
    reward: EpisodeReward | None = None
    """The task's outcome by its benchmark's evaluator (τ² tasks), stored beside the episode."""


@dataclass(frozen=True)
class SharedAnswer:
    """A generation shared by several episodes (the probe's one assistant answer per item).

    Read back from the store, `message` has speaker "" and turn index 0: neither is stored,
    because each episode that reuses the answer places it at its own turn, under its own speaker.
    """

    answer_id: str
    """Hash of the item and the assistant that answered it: the same pair reuses the answer."""
    item_id: str
    """The dataset item answered."""
    message: Message
    """The generated answer with its sampling parameters, usage and finish reason."""
    task_score: float | None
    """The answer's task score, when the item can be scored."""


@dataclass(frozen=True)
class JudgeIdentity:
    """Who labelled: judge name, prompt/rules version, and the model (or annotator) behind it."""

    judge: str
    """The judge's name (`local`, a judge spec's name, or `human`)."""
    version: str
    """Prompt or rules version: labels made under another version are another identity."""
    model: str = ""
    """The model behind the judge, or the human annotator's name; "" for rules."""

    def __str__(self) -> str:
        return f"{self.judge}@{self.version}" + (f":{self.model}" if self.model else "")

    @classmethod
    def parse(cls, text: str) -> "JudgeIdentity":
        """The identity `str` wrote (`judge@version[:model]`), for one whose version holds no `@` or `:`."""
        judge, _, rest = text.partition("@")
        version, _, model = rest.partition(":")
        return cls(judge, version, model)


@dataclass(frozen=True)
class LabelRow:
    """One verdict on one user turn, as a labeller hands it to `write_labels`.

    The store defines this plain row instead of taking a judge's own verdict type, so that the
    store depends on no judge and every labeller (model judge, rules, human import) writes alike.
    """

    episode_id: str
    """Episode of the labelled user turn."""
    turn_index: int
    """Message index of the labelled user turn."""
    status: str
    """`scored` when the row carries a label or a follow-up decision, else `unscored`."""
    label: str | None = None
    """The 8-way taxonomy label; None for a binary judge or an unscored verdict."""
    followup: bool | None = None
    """Whether the turn is a genuine follow-up; None when unscored."""
    reason: str = ""
    """The labeller's short justification."""
    raw: str | None = None
    """What the labeller said when it could not be parsed (kept so an unscored row can be inspected)."""
    attempts: int = 1
    """Model calls it took to get this verdict (1 for rules and humans)."""


@dataclass(frozen=True)
class LabelRecord:
    """A stored verdict read back: the row as written, who wrote it and when."""

    episode_id: str
    """Episode of the labelled user turn."""
    turn_index: int
    """Message index of the labelled user turn."""
    who: JudgeIdentity
    """The judge (or annotator) identity the label is stored under."""
    status: str
    """`scored` or `unscored`; an unscored verdict is never a label and is left out of rates."""
    label: str | None
    """The 8-way taxonomy label, when the labeller gives one."""
    followup: bool | None
    """Whether the turn is a genuine follow-up; None when unscored."""
    reason: str | None
    """The labeller's short justification."""
    raw: str | None
    """The unparsed reply of an unscored verdict."""
    attempts: int
    """Model calls it took to get this verdict."""
    created_at: str
    """When the label was written (UTC, ISO format): the latest one per turn and identity wins."""


@dataclass(frozen=True)
class RunRecord:
    """One run as stored, with its status as it is now (a `running` run whose writer died is `interrupted`).

    `record["kind"]` reads a field like the dict `Store.run` used to return, so callers written
    against that dict keep working.
    """

    schema_version: int
    """Schema version of the store file the run was read from (older stores open read-only unchanged)."""
    run_id: str
    """The run's id: scenario name and a hash of the resolved spec."""
    scenario: str
    """Name of the scenario spec."""
    kind: str
    """Scenario kind (`probe`, `dialogue`, `info_gathering`): which report the run gets."""
    spec: dict[str, Any]
    """The fully resolved scenario spec the run was started with."""
    fingerprint: str
    """Hash of `spec`: a resumed run must have the same one."""
    versions: dict[str, Any]
    """Versions of testbed and the libraries it ran with."""
    git_revision: str | None
    """Git revision of the testbed checkout, when it ran from one."""
    started_at: str
    """When the run was first started (UTC, ISO format)."""
    finished_at: str | None
    """When the run last ended; None while it runs."""
    status: str
    """The effective status (`Store.effective_status`): done, incomplete, running, interrupted or failed."""
    planned_episodes: int
    """Episodes the run planned, at its last start."""
    framework: str = field(default_factory=default_framework)
    """The framework that ran its turn loops (testbed.frameworks)."""

    def __getitem__(self, name: str) -> Any:
        if name not in _RUN_FIELDS:
            raise KeyError(name)
        return getattr(self, name)


_RUN_FIELDS = frozenset(f.name for f in fields(RunRecord))


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode as stored: its conditions, how it ended, and what it cost."""

    run_id: str
    """The run the episode belongs to."""
    key: EpisodeKey
    """Its id and the conditions it was generated under."""
    status: str
    """`done` or `error`; an errored episode is retried by a resumed run."""
    termination: str | None
    """Why the conversation stopped (e.g. `max_turns`, `user_done`, `assistant_done`, `error`)."""
    error_reason: str | None
    """Why it failed (secrets redacted); None when done."""
    task_score: float | None
    """The assistant's task score (1.0 correct, 0.0 wrong); None when the item cannot be scored."""
    usage: Usage
    """Tokens and time generated in the episode (shared generations counted where they were made)."""
    finished_at: str
    """When the outcome was written (UTC, ISO format)."""

    @property
    def episode_id(self) -> str:
        """The episode's id (`key.episode_id`)."""
        return self.key.episode_id


@dataclass(frozen=True)
class TurnRecord:
    """One generated user turn with the context a judge or a researcher reads it in."""

    episode_id: str
    """Episode of the turn."""
    turn_index: int
    """Message index of the turn in its episode."""
    question: str
    """The episode's first user message: the request the conversation is about."""
    answer: str
    """The latest assistant message before the turn, as shown to the simulated user."""
    user_turn: str
    """What the simulated user wrote."""
    context: tuple[Earlier, ...] = ()
    """The conversation between the request and the answer (`testbed.conversation_context`), capped."""

    @property
    def turn_id(self) -> str:
        """`episode_id:turn_index`, the turn's id in judge inputs and label files."""
        return f"{self.episode_id}:{self.turn_index}"


@dataclass(frozen=True)
class FailedAttempt:
    """An errored attempt at an episode that a later attempt replaced; kept so that no outcome is lost."""

    run_id: str
    """The run of the episode."""
    episode_id: str
    """The episode that was attempted."""
    attempt: int
    """1 for the episode's first replaced attempt, 2 for the next, and so on."""
    termination: str | None
    """How the attempt stopped."""
    error_reason: str | None
    """Why it failed, as stored with the attempt."""
    messages: int
    """How many messages the attempt had stored (they are not kept, its outcome is)."""
    finished_at: str
    """When the failed attempt was written."""


@dataclass(frozen=True)
class WireRecord:
    """One request a framework sent to a model server, as the wire recorder saw it."""

    seq: int
    """Order within the episode (0 first)."""
    role: str
    """Whose request it was: `assistant` or `user`."""
    path: str
    """The path below the participant's base URL (`chat/completions`)."""
    request: Any
    """The request body as sent: decoded JSON, or the text when it was not JSON."""
    status: int
    """HTTP status of the reply (502 when the server could not be reached)."""
    response: Any
    """The reply body: decoded JSON, or the text when it was not JSON (a stream, an error page)."""
    prompt_tokens: int | None
    """Prompt tokens the server reported, when it did."""
    completion_tokens: int | None
    """Completion tokens the server reported, when it did."""
    latency_s: float
    """Seconds from sending the request to the whole reply."""
    sent_at: float
    """When it was sent (Unix time)."""
    turn_index: int | None = None
    """The turn the request produced (a retry counts for the turn it was retrying); None before attribution."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request ([] when the body had none)."""
        found = self.request.get("messages") if isinstance(self.request, dict) else None
        return found if isinstance(found, list) else []

    @property
    def answered(self) -> bool:
        """Whether the request got a completion (HTTP 200 with a choice), not a fault or a body no client can read."""
        choices = self.response.get("choices") if self.status == 200 and isinstance(self.response, dict) else None
        return isinstance(choices, list) and bool(choices)

    @property
    def reply(self) -> str | None:
        """The text of the first choice, when the reply had one."""
        try:
            return self.response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None

    @property
    def sampling(self) -> dict[str, Any]:
        """The request's sampling fields (everything but the model and the messages)."""
        return {k: v for k, v in self.request.items() if k not in ("messages", "model")} if isinstance(self.request, dict) else {}
