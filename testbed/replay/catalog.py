"""A run's episodes as rows for the replay app: conditions, how each ended, drift onset and top label.

One `RunCatalog` is read per opened run, in a handful of whole-run queries (`testbed.store.browse`),
so a run of 10,000 episodes opens in well under a second; transcripts are read one at a time when
an episode is opened. Drift follows `testbed.analysis.drift`: the onset is the ordinal of the first
generated user turn a judge gave a drift label, and unscored turns are never drift.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from testbed.judges.taxonomy import taxonomy
from testbed.store import EpisodeRecord, JudgeIdentity, LabelRecord, Store
from testbed.store.browse import generated_turn_indices
from testbed.store.labels import HUMAN, latest_label_tuples


@dataclass(frozen=True)
class EpisodeRow:
    """One episode as the episode table shows it, under one judge's labels."""

    episode_id: str
    """The episode's id."""
    item_id: str
    """The dataset item or task it is about."""
    assistant_model: str
    """The assistant's model."""
    user_model: str
    """The simulated user's model."""
    dataset: str
    """Where the item came from."""
    user_mode: str
    """How the simulated user was prompted."""
    temperature: float
    """The simulated user's temperature."""
    perturbation: str
    """What was done to the answer the user saw (`none`)."""
    framework: str
    """The framework that ran the turn loop."""
    status: str
    """`done` or `error`."""
    termination: str
    """Why the conversation stopped ("" when unknown)."""
    error: str
    """Why it failed ("" when it did not)."""
    user_turns: int
    """Generated user turns."""
    onset: int | None
    """1-based ordinal of the first user turn labelled with a drift label; None when none was."""
    onset_turn: int | None
    """That turn's message index."""
    top_label: str
    """The judge's most frequent label on the episode's turns ("" when it scored none); ties go to the taxonomy's order."""
    labels: frozenset[str] = field(default_factory=frozenset)
    """Every label the judge gave on the episode's turns."""

    @property
    def drifted(self) -> bool:
        """Whether the judge saw the user leave its role."""
        return self.onset is not None

    @property
    def errored(self) -> bool:
        """Whether the episode failed."""
        return self.status == "error"


def _top_label(labels: list[str]) -> str:
    if not labels:
        return ""
    order = {name: k for k, name in enumerate(taxonomy().labels)}
    counts = Counter(labels)
    return min(counts, key=lambda name: (-counts[name], order.get(name, len(order))))


Verdict = tuple
"""A stored verdict as `testbed.store.labels.latest_label_tuples` gives it (`LABEL_TUPLE` fields)."""


def _record(row: Verdict, who: JudgeIdentity) -> LabelRecord:
    return LabelRecord(row[0], row[1], who, row[5], row[6], None if row[7] is None else bool(row[7]), row[8], None, 1, "")


@dataclass
class RunCatalog:
    """A run's episodes, every identity's latest labels and the generated user turns, read once.

    Labels are kept as plain tuples and become `LabelRecord`s only for the episode on screen; each
    judge's scored labels are indexed by turn the first time that judge is asked for.
    """

    run_id: str
    framework: str
    identities: list[JudgeIdentity]
    episodes: list[EpisodeRecord]
    generated: dict[str, list[int]]
    labels: dict[tuple[str, int], list[Verdict]]
    scored_by_judge: dict[JudgeIdentity, dict[tuple[str, int], str]] = field(default_factory=dict)
    by_id: dict[str, EpisodeRecord] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e.key.episode_id: e for e in self.episodes}

    @classmethod
    def load(cls, store: Store, run_id: str) -> "RunCatalog":
        """Read the run's episodes, generated turns and latest labels (of every identity)."""
        by_turn: dict[tuple[str, int], list[Verdict]] = defaultdict(list)
        for row in latest_label_tuples(store, run_id):
            by_turn[(row[0], row[1])].append(row)
        identities = sorted({JudgeIdentity(*row[2:5]) for rows in by_turn.values() for row in rows}, key=str)
        return cls(run_id, store.framework_of(run_id), identities, store.episodes(run_id),
                   generated_turn_indices(store, run_id), dict(by_turn))

    def episode(self, episode_id: str) -> EpisodeRecord:
        """The run's episode with this id (KeyError when it has none)."""
        return self.by_id[episode_id]

    def records(self, episode_id: str, turn_index: int) -> list[LabelRecord]:
        """Every identity's latest verdict on a turn, judges before people."""
        out = [_record(row, JudgeIdentity(*row[2:5])) for row in self.labels.get((episode_id, turn_index), [])]
        return sorted(out, key=lambda r: (r.who.judge == HUMAN, str(r.who)))

    def scored_labels(self, who: JudgeIdentity) -> dict[tuple[str, int], str]:
        """One identity's scored 8-way labels by (episode id, turn index)."""
        if who not in self.scored_by_judge:
            key = (who.judge, who.version, who.model)
            self.scored_by_judge[who] = {turn: row[6] for turn, rows in self.labels.items() for row in rows
                                         if row[2:5] == key and row[5] == "scored" and row[6]}
        return self.scored_by_judge[who]

    def rows(self, judge: JudgeIdentity | None) -> list[EpisodeRow]:
        """Every episode as a row, with drift onset and top label under `judge` (none of either when None)."""
        drift = taxonomy().drift_labels
        scored = self.scored_labels(judge) if judge is not None else {}
        out = []
        for e in self.episodes:
            eid = e.key.episode_id
            turns = self.generated.get(eid, [])
            given = [(k, t, scored[(eid, t)]) for k, t in enumerate(turns, 1) if (eid, t) in scored]
            onset = next(((k, t) for k, t, label in given if label in drift), (None, None))
            labels = [label for *_, label in given]
            out.append(EpisodeRow(
                eid, e.key.item_id, e.key.assistant_model, e.key.user_model, e.key.dataset, e.key.user_mode,
                e.key.temperature, e.key.perturbation, self.framework, e.status, e.termination or "", e.error_reason or "",
                len(turns), onset[0], onset[1], _top_label(labels), frozenset(labels)))
        return out
