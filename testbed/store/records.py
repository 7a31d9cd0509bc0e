"""Plain records the store writes and reads, independent of how episodes were produced."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.transcript import Message, Usage


@dataclass(frozen=True, slots=True)
class EpisodeKey:
    """What identifies an episode and the conditions it was generated under."""

    episode_id: str
    item_id: str
    dataset: str
    assistant_agent: str
    assistant_model: str
    user_agent: str
    user_model: str
    user_mode: str
    temperature: float
    sample_index: int
    perturbation: str


@dataclass(frozen=True)
class EpisodeOutcome:
    """A finished episode: its messages, or the reason it failed. Written in one transaction."""

    key: EpisodeKey
    messages: list[Message]
    status: str
    termination: str | None = None
    error_reason: str | None = None
    task_score: float | None = None
    usage: Usage = Usage()


@dataclass(frozen=True)
class SharedAnswer:
    """A generation shared by several episodes (the probe's one assistant answer per item)."""

    answer_id: str
    item_id: str
    message: Message
    task_score: float | None
