"""Labelling user turns by hand: a fair order to label them in, and labels saved the moment they are given.

The order is a seeded shuffle stratified by condition: turns are shuffled within each condition
(models, dataset, user mode, temperature, perturbation) and the conditions interleaved in
proportion, so any prefix of the order (the first 100 turns a person labels) holds each condition
in about its share of the run. The same seed gives the same order, so two annotators who label
the first 100 turns label the same 100.

Labels go through the label store as `human@v1:NAME`, one transaction per label, so quitting
mid-way loses nothing and `testbed agree RUN --b human:NAME` reads them. The store is append-only:
undo appends an unscored row ("withdrawn"), and the newest row is the one that counts.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from testbed.judges.learned.doubt import stored_margin
from testbed.judges.taxonomy import taxonomy
from testbed.label_limits import checked_label
from testbed.replay.catalog import RunCatalog
from testbed.store import JudgeIdentity, LabelRow, Store, TurnRecord
from testbed.store.labels import HUMAN, HUMAN_VERSION, latest_labels, write_labels
from testbed.store.records import CONDITIONS

WITHDRAWN = "withdrawn by the annotator (undo)"


def annotator(name: str, option: str = "--label") -> JudgeIdentity:
    """The identity a person's labels are stored under: `human@v1:NAME` (`option` is what named them, for the message)."""
    checked_label(name, option)
    if not name or not name.strip() or ":" in name or "@" in name:
        raise ValueError(f"annotator name {name!r} must be a non-empty word without ':' or '@' (e.g. --label alice)")
    return JudgeIdentity(HUMAN, HUMAN_VERSION, name.strip())


def stratified_order(strata: dict[tuple[str, int], tuple], seed: int) -> list[tuple[str, int]]:
    """Turns in labelling order: shuffled within each stratum, strata interleaved in proportion.

    Each turn of a stratum of n gets the key (i + u) / n, for its shuffled position i and one
    uniform offset u per stratum; sorting by key spreads every stratum evenly over the order.
    """
    rng = random.Random(seed)
    groups: dict[tuple, list[tuple[str, int]]] = defaultdict(list)
    for turn in sorted(strata):
        groups[strata[turn]].append(turn)
    keyed = []
    for stratum in sorted(groups, key=repr):
        turns = groups[stratum]
        rng.shuffle(turns)
        offset = rng.random()
        keyed.extend(((i + offset) / len(turns), repr(stratum), turn) for i, turn in enumerate(turns))
    return [turn for *_, turn in sorted(keyed)]


def uncertain_first(order: list[tuple[str, int]], doubt: dict[tuple[str, int], float]) -> list[tuple[str, int]]:
    """The order with the turns the judge was least sure of first (smallest margin); the rest keep their places after."""
    unsure = sorted((t for t in order if t in doubt), key=lambda t: doubt[t])
    return unsure + [t for t in order if t not in doubt]


@dataclass
class LabellingSession:
    """One person labelling one run's judged turns (generated user turns of finished episodes)."""

    store: Store
    catalog: RunCatalog
    who: JudgeIdentity
    order: list[TurnRecord]
    given: dict[tuple[str, int], tuple[str, str]]
    history: list[tuple[str, int]]

    @classmethod
    def open(cls, store: Store, catalog: RunCatalog, name: str, seed: int = 0,
             doubt_of: JudgeIdentity | None = None, only: frozenset[tuple[str, int]] | None = None) -> "LabellingSession":
        """Order the run's judged turns for `name` and read what they labelled before.

        With `doubt_of` (a judge that stores its probability, the learned one), the turns it was
        least sure of come first; the person still never sees its labels. With `only` (a review's
        chosen turns), the queue holds those turns alone.
        """
        who = annotator(name)
        turns = {(t.episode_id, t.turn_index): t for t in store.turns(catalog.run_id)
                 if only is None or (t.episode_id, t.turn_index) in only}
        conditions = {e.key.episode_id: tuple(getattr(e.key, c) for c in CONDITIONS) for e in catalog.episodes}
        order = stratified_order({key: conditions[key[0]] for key in turns}, seed)
        if doubt_of is not None:
            doubt = {(r.episode_id, r.turn_index): u for r in latest_labels(store, catalog.run_id, doubt_of)
                     if (u := stored_margin(r.raw)) is not None}
            order = uncertain_first(order, doubt)
        given = {(r.episode_id, r.turn_index): (r.label, r.reason) for r in latest_labels(store, catalog.run_id, who)
                 if r.status == "scored" and r.label}
        return cls(store, catalog, who, [turns[key] for key in order], given, [])

    @property
    def total(self) -> int:
        """Turns to label."""
        return len(self.order)

    @property
    def done(self) -> int:
        """Turns this person has a label on."""
        return sum((t.episode_id, t.turn_index) in self.given for t in self.order)

    def next_position(self, after: int = -1, skipped: frozenset[int] = frozenset()) -> int | None:
        """The first unlabelled, unskipped turn after position `after` (wrapping round), or None when all are labelled."""
        n = len(self.order)
        for step in range(1, n + 1):
            position = (after + step) % n
            turn = self.order[position]
            if (turn.episode_id, turn.turn_index) not in self.given and position not in skipped:
                return position
        return None

    def label_of(self, turn: TurnRecord) -> tuple[str, str] | None:
        """This person's label and note on a turn, or None."""
        return self.given.get((turn.episode_id, turn.turn_index))

    def label(self, turn: TurnRecord, label: str, note: str = "") -> None:
        """Store a label (and note) on a turn now."""
        t = taxonomy()
        t.check(label)
        write_labels(self.store, self.catalog.run_id, self.who,
                     [LabelRow(turn.episode_id, turn.turn_index, "scored", label, t.is_followup(label), note)])
        key = (turn.episode_id, turn.turn_index)
        self.given[key] = (label, note)
        self.history.append(key)

    def undo(self) -> tuple[str, int] | None:
        """Withdraw the last label given in this session; the turn it was on, or None when there is nothing to undo."""
        while self.history:
            key = self.history.pop()
            if key in self.given:
                write_labels(self.store, self.catalog.run_id, self.who, [LabelRow(*key, "unscored", reason=WITHDRAWN)])
                del self.given[key]
                return key
        return None
