"""A run's episodes as rows for the replay app: conditions, how each ended, drift onset, top label, user faults.

One `RunCatalog` is read per opened run, in a handful of whole-run queries (`testbed.store.browse`),
so a run of 10,000 episodes opens in well under a second; transcripts are read one at a time when
an episode is opened. Drift follows `testbed.analysis.drift`: the onset is the ordinal of the first
generated user turn a judge gave a drift label, and unscored turns are never drift.

A run whose kind detects simulated-user faults (its views' `faults`, testbed.specs.kind_views) also has them,
as stored when the run finished (testbed.store.user_faults), read once when the run is opened; a run of any
other kind reads none. Faults the rules found are the same under every judge; those a judge's labels imply
(role drift) follow the chosen judge like the drift onset does, derived by the detector from the labels the
catalog holds. Episodes whose faults are not stored are detected by the kind when it can (its packages
installed), and the catalog says why when it cannot (`fault_problem`) rather than failing. Reading may still
take seconds on such a run, so the app loads the catalog without them (`read_faults=False`) and reads them in the
background (`run_faults`, then `set_faults`); until then `fault_problem` is `FAULTS_PENDING`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from testbed.judges.taxonomy import taxonomy
from testbed.specs.registries import kind_views
from testbed.store import EpisodeRecord, JudgeIdentity, LabelRecord, Store
from testbed.store.browse import generated_turn_indices
from testbed.store.labels import HUMAN, latest_label_tuples
from testbed.store.turn_reviews import turn_reviews_df
from testbed.store.user_faults import FaultRow

FAULTS_PENDING = "reading the user faults…"
"""`fault_problem` of a catalog loaded without its faults, until `set_faults` gives them."""


def known_fault_names() -> dict[str, str]:
    """Every fault kind a registered scenario kind detects → its short name, for a filter read before any run is."""
    from testbed.specs.registries import KINDS

    names: dict[str, str] = {}
    for kind in KINDS.names():
        detector = kind_views(kind).faults
        names.update(detector.names if detector is not None else {})
    return names


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
    faults: tuple[str, ...] = ()
    """The kinds of simulated-user fault on its turns, in the detector's order (empty for a kind that detects none)."""
    fault_labels: tuple[str, ...] = ()
    """The same kinds by their short names (the detector's `names`)."""

    @property
    def drifted(self) -> bool:
        """Whether the judge saw the user leave its role."""
        return self.onset is not None

    @property
    def errored(self) -> bool:
        """Whether the episode failed."""
        return self.status == "error"

    @property
    def faulted(self) -> bool:
        """Whether some user turn of the episode carries a simulated-user fault."""
        return bool(self.faults)

    @property
    def fault_names(self) -> str:
        """The fault kinds by their short names, e.g. `premature, invented` ("" when none)."""
        return ", ".join(self.fault_labels)


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
    detector: Any = None
    """The fault detector of the run's kind (testbed.specs.kind_views.FaultDetector), None for a kind that has none."""
    faults: dict[str, tuple[FaultRow, ...]] = field(default_factory=dict)
    """The faults the rules found (none of a judge's), by episode id, in turn order."""
    fault_problem: str = ""
    """Why some or all of the run's faults are not shown ("" when they were read)."""
    turn_reviews: dict[tuple[str, int], tuple[tuple[str, ...], str | None, str, str, str]] = field(default_factory=dict)
    """The last whole-conversation reviewer's tagged user turns by (episode id, turn): (tags, severity, its identity, "", reason)."""
    by_id: dict[str, EpisodeRecord] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e.key.episode_id: e for e in self.episodes}

    @property
    def faults_detected(self) -> bool:
        """Whether the run's kind detects simulated-user faults (its episodes get a faults column and marks)."""
        return self.detector is not None

    @property
    def fault_names(self) -> Mapping[str, str]:
        """Each fault kind → its short name, in the detector's order (empty for a kind that detects none)."""
        return self.detector.names if self.detector is not None else {}

    @classmethod
    def load(cls, store: Store, run_id: str, *, read_faults: bool = True) -> "RunCatalog":
        """Read the run's episodes, generated turns and latest labels (of every identity), and its user faults when its
        kind detects them, unless `read_faults` is False (then they are `FAULTS_PENDING` until `set_faults`)."""
        by_turn: dict[tuple[str, int], list[Verdict]] = defaultdict(list)
        for row in latest_label_tuples(store, run_id):
            by_turn[(row[0], row[1])].append(row)
        identities = sorted({JudgeIdentity(*row[2:5]) for rows in by_turn.values() for row in rows}, key=str)
        run = store.find_run(run_id)
        detector = kind_views(run.kind if run is not None else None).faults
        faults, problem = ({}, "") if detector is None else run_faults(store, run_id) if read_faults else ({}, FAULTS_PENDING)
        return cls(run_id, store.framework_of(run_id), identities, store.episodes(run_id),
                   generated_turn_indices(store, run_id), dict(by_turn), detector=detector, faults=faults, fault_problem=problem,
                   turn_reviews=tagged_turns(store, run_id) if detector is not None else {})

    def set_faults(self, faults: dict[str, tuple[FaultRow, ...]], problem: str) -> None:
        """Take the user faults `run_faults` read for this run (and why some are not shown, "" when all were read)."""
        self.faults, self.fault_problem = faults, problem

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

    def episode_faults(self, episode_id: str, judge: JudgeIdentity | None) -> list[FaultRow]:
        """An episode's simulated-user faults in turn order: those the rules found, and those `judge`'s labels on its
        generated user turns imply (the detector's `from_labels`: role drift, evidence the label). Empty for a run
        whose kind detects none, or whose faults could not be read."""
        if self.detector is None or (self.fault_problem and not self.faults):
            return []
        found = list(self.faults.get(episode_id, ()))
        if judge is not None:
            scored = self.scored_labels(judge)
            found += self.detector.from_labels({(episode_id, t): scored[(episode_id, t)] for t in self.generated.get(episode_id, [])
                                                if (episode_id, t) in scored})
        order = {kind: k for k, kind in enumerate(self.fault_names)}
        return sorted(found, key=lambda f: (f.turn_index, order.get(f.kind, len(order))))

    def _fault_kinds(self, episode_id: str, judge: JudgeIdentity | None) -> tuple[str, ...]:
        if self.detector is None:
            return ()
        order = {kind: k for k, kind in enumerate(self.fault_names)}
        return tuple(sorted({f.kind for f in self.episode_faults(episode_id, judge)}, key=lambda kind: order.get(kind, len(order))))

    def rows(self, judge: JudgeIdentity | None) -> list[EpisodeRow]:
        """Every episode as a row, with drift onset, top label and role drift under `judge` (none of them when None)."""
        drift = taxonomy().drift_labels
        scored = self.scored_labels(judge) if judge is not None else {}
        out = []
        for e in self.episodes:
            eid = e.key.episode_id
            turns = self.generated.get(eid, [])
            given = [(k, t, scored[(eid, t)]) for k, t in enumerate(turns, 1) if (eid, t) in scored]
            onset = next(((k, t) for k, t, label in given if label in drift), (None, None))
            labels = [label for *_, label in given]
            kinds = self._fault_kinds(eid, judge)
            out.append(EpisodeRow(
                eid, e.key.item_id, e.key.assistant_model, e.key.user_model, e.key.dataset, e.key.user_mode,
                e.key.temperature, e.key.perturbation, self.framework, e.status, e.termination or "", e.error_reason or "",
                len(turns), onset[0], onset[1], _top_label(labels), frozenset(labels),
                kinds, tuple(self.fault_names.get(kind, kind) for kind in kinds)))
        return out


def tagged_turns(store: Store, run_id: str) -> dict[tuple[str, int], tuple[tuple[str, ...], str | None, str, str, str]]:
    """The user turns the run's last whole-conversation reviewer tagged (scored reviews only), as `RunCatalog.turn_reviews`."""
    reviewers = store.turn_reviewers(run_id)
    if not reviewers:
        return {}
    reviews = turn_reviews_df(store, run_id, reviewers[-1])
    tagged = reviews[(reviews.status == "scored") & reviews.tags.map(len).gt(0)]
    return {(e, int(t)): (tuple(tags), severity if isinstance(severity, str) else None, str(reviewers[-1]), "", reason or "")
            for e, t, tags, severity, reason in zip(tagged.episode_id, tagged.turn_index, tagged.tags, tagged.severity, tagged.reason)}


def run_faults(store: Store, run_id: str) -> tuple[dict[str, tuple[FaultRow, ...]], str]:
    """The faults the rules found in the run, by episode (as its kind's detector reads them: stored, or detected now
    where it can), and why some are not shown ("" when all were read); never raises, so a kind's package that
    cannot load its data does not close the replay."""
    run = store.find_run(run_id)
    detector = kind_views(run.kind if run is not None else None).faults
    if detector is None:
        return {}, ""
    try:
        rows, problem = detector.read(store, run_id)
    except Exception as exc:  # noqa: BLE001 - a kind that cannot load its data must not close the replay
        return {}, f"user faults could not be read: {type(exc).__name__}: {exc}"
    out: dict[str, list[FaultRow]] = defaultdict(list)
    for row in rows:
        out[row.episode_id].append(row)
    return {eid: tuple(faults) for eid, faults in out.items()}, problem
