"""A run's episodes as rows for the replay app: conditions, how each ended, drift onset, top label, user faults.

One `RunCatalog` is read per opened run, in a handful of whole-run queries (`testbed.store.browse`),
so a run of 10,000 episodes opens in well under a second; transcripts are read one at a time when
an episode is opened. Drift follows `testbed.analysis.drift`: the onset is the ordinal of the first
generated user turn a judge gave a drift label, and unscored turns are never drift.

A τ² run (kind `tau2`) also has its simulated-user faults (`testbed.analysis.tau2.faults.turn_faults`),
read once when the run is opened, as the τ² report reads them; a run of any other kind reads none and
imports nothing for them. Faults read from the text are the same under every judge; `role_drift` is a
judge's drift label on a user turn, so it follows the chosen judge like the drift onset does. With τ²
not installed, or an episode whose task the installed τ² lacks, there is no fault to show, and the
catalog says why (`fault_problem`) rather than failing. Reading them imports τ² (seconds, the first
time), so the app loads the catalog without them (`read_faults=False`) and reads them in the
background (`run_faults`, then `set_faults`); until then `fault_problem` is `FAULTS_PENDING`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from testbed.judges.taxonomy import taxonomy
from testbed.specs.registries import KINDS
from testbed.store import EpisodeRecord, JudgeIdentity, LabelRecord, Store
from testbed.store.browse import generated_turn_indices
from testbed.store.labels import HUMAN, latest_label_tuples

if TYPE_CHECKING:
    from testbed.scenarios.tau2.user_faults import UserFault

FAULT_NAMES = {"premature_stop": "premature", "revealed_early": "early", "invented_fact": "invented",
               "ungrounded_device_claim": "ungrounded", "role_drift": "drift"}
"""The short name the table shows for each fault kind (`FAULT_KINDS`, in its order); each is a part of its kind's
name, so `fault=invented` and `fault=invented_fact` find the same episodes."""
_FAULT_ORDER = {kind: k for k, kind in enumerate(FAULT_NAMES)}
FAULTS_PENDING = "reading the user faults…"
"""`fault_problem` of a τ² catalog loaded without its faults, until `set_faults` gives them."""


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
    """The kinds of simulated-user fault on its turns, in `FAULT_NAMES` order (τ² runs only; empty for others)."""

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
        return ", ".join(FAULT_NAMES.get(kind, kind) for kind in self.faults)


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
    tau2: bool = False
    """Whether the run is a τ² run, whose episodes have simulated-user faults."""
    faults: dict[str, tuple["UserFault", ...]] = field(default_factory=dict)
    """The faults read from each episode's text (no `role_drift`: that is the judge's), by episode id, in turn order."""
    fault_problem: str = ""
    """Why a τ² run shows no faults at all ("" when they were read)."""
    by_id: dict[str, EpisodeRecord] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e.key.episode_id: e for e in self.episodes}

    @classmethod
    def load(cls, store: Store, run_id: str, *, read_faults: bool = True) -> "RunCatalog":
        """Read the run's episodes, generated turns and latest labels (of every identity), and a τ² run's user faults
        unless `read_faults` is False (then they are `FAULTS_PENDING` until `set_faults`)."""
        by_turn: dict[tuple[str, int], list[Verdict]] = defaultdict(list)
        for row in latest_label_tuples(store, run_id):
            by_turn[(row[0], row[1])].append(row)
        identities = sorted({JudgeIdentity(*row[2:5]) for rows in by_turn.values() for row in rows}, key=str)
        run = store.find_run(run_id)
        tau2 = run is not None and run.kind in KINDS and KINDS.entry(run.kind).user_faults
        faults, problem = run_faults(store, run_id) if tau2 and read_faults else ({}, FAULTS_PENDING if tau2 else "")
        return cls(run_id, store.framework_of(run_id), identities, store.episodes(run_id),
                   generated_turn_indices(store, run_id), dict(by_turn), tau2=tau2, faults=faults, fault_problem=problem)

    def set_faults(self, faults: dict[str, tuple["UserFault", ...]], problem: str) -> None:
        """Take the user faults `run_faults` read for this τ² run (and why there are none, "" when they were read)."""
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

    def episode_faults(self, episode_id: str, judge: JudgeIdentity | None) -> list["UserFault"]:
        """An episode's simulated-user faults in turn order: those read from its text, and `role_drift` on each
        user turn `judge` gave a drift label (evidence: the label). Empty for a run that is not τ²."""
        if not self.tau2 or self.fault_problem:
            return []
        found = list(self.faults.get(episode_id, ()))
        if judge is not None:
            from testbed.scenarios.tau2.user_faults import UserFault

            drift, scored = taxonomy().drift_labels, self.scored_labels(judge)
            found += [UserFault("role_drift", t, scored[(episode_id, t)]) for t in self.generated.get(episode_id, [])
                      if scored.get((episode_id, t)) in drift]
        return sorted(found, key=lambda f: (f.turn_index, _FAULT_ORDER.get(f.kind, len(_FAULT_ORDER))))

    def _fault_kinds(self, episode_id: str, drifted: bool) -> tuple[str, ...]:
        if not self.tau2 or self.fault_problem:
            return ()
        kinds = {f.kind for f in self.faults.get(episode_id, ())} | ({"role_drift"} if drifted else set())
        return tuple(sorted(kinds, key=lambda kind: _FAULT_ORDER.get(kind, len(_FAULT_ORDER))))

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
            out.append(EpisodeRow(
                eid, e.key.item_id, e.key.assistant_model, e.key.user_model, e.key.dataset, e.key.user_mode,
                e.key.temperature, e.key.perturbation, self.framework, e.status, e.termination or "", e.error_reason or "",
                len(turns), onset[0], onset[1], _top_label(labels), frozenset(labels),
                self._fault_kinds(eid, onset[0] is not None)))
        return out


def run_faults(store: Store, run_id: str) -> tuple[dict[str, tuple["UserFault", ...]], str]:
    """A τ² run's faults read from the text, by episode, and why there are none at all ("" when they were read);
    never raises for a τ² that is missing or cannot load its domains."""
    from testbed.scenarios.tau2.domains import tau2_installed

    if not tau2_installed():
        return {}, "τ² is not installed, so user faults cannot be read"
    from testbed.analysis.tau2.faults import turn_faults
    from testbed.scenarios.tau2.user_faults import UserFault

    try:
        frame = turn_faults(store, run_id)
    except Exception as exc:  # noqa: BLE001 - a τ² package that cannot load its domains must not close the replay
        return {}, f"user faults could not be read: {type(exc).__name__}: {exc}"
    out: dict[str, list[UserFault]] = defaultdict(list)
    for eid, turn, kind, evidence in frame.itertuples(index=False, name=None):
        out[eid].append(UserFault(kind, int(turn), evidence))
    return {eid: tuple(faults) for eid, faults in out.items()}, ""
