"""One episode as the replay shows it: each message with its true role, labels, source edge and marks.

Built from the store's messages and a `RunCatalog`'s labels; the app and `testbed show-episode`
render the same view, so what a terminal shows and what a pipe prints never disagree. Source
edges are the conversation graph's (`testbed.analysis.graphs.episode_graph`): the earlier turn a
generated user turn copies most, when it copies at least half of it. On a run whose kind detects simulated-user
faults each user turn also carries its faults (`RunCatalog.episode_faults`), those a judge implies under the chosen one.
On a run over real conversations, a simulated user's first turn carries the human reference of its item
(`testbed.store.references`): what the real user wrote after the same context, to read the two side by side.
The reference episodes themselves are shown as they are, with nothing under their turn.
Source edges are found on each message's first `GRAPH_CHARS` characters, so a megabyte reply costs the
view no more than a long one (a user turn copying from deep inside such a reply gets no edge here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from testbed.analysis.graphs import episode_graph, message_dict
from testbed.replay.catalog import RunCatalog
from testbed.scenarios.human_reference import HUMAN_MODE
from testbed.store import EpisodeRecord, JudgeIdentity, LabelRecord, Store
from testbed.store.references import ReferenceTurn, reference_turns
from testbed.store.user_faults import FaultRow
from testbed.transcript import Message, is_assistant, is_user

GRAPH_CHARS = 100_000
"""Characters of each message that source edges are looked for in: word n-grams of a 10 MB text cost seconds."""


@dataclass(frozen=True)
class Source:
    """The earlier turn a user turn copies: `kind` is `restates` (a user turn) or `echoes` (an assistant turn)."""

    kind: str
    turn_index: int
    similarity: float

    def __str__(self) -> str:
        return f"{self.kind} turn {self.turn_index} ({self.similarity:.2f})"


@dataclass(frozen=True)
class TurnView:
    """One message and what the replay says about it."""

    message: Message
    """The message as stored."""
    ordinal: int
    """k of a generated user turn (1-based), 0 for every other message."""
    labels: tuple[LabelRecord, ...]
    """Every identity's latest verdict on it (generated user turns only), judges before humans."""
    source: Source | None
    """The earlier turn it copies, for a generated user turn that copies one."""
    onset: bool
    """Whether it is the episode's drift onset under the chosen judge."""
    perturbed: str | None
    """The perturbation the answer was shown under, for the answer a probe's user saw perturbed."""
    call_turn: int | None = None
    """For a tool result: the turn of the message that made the call it answers (None when no stored message did)."""
    faults: tuple[FaultRow, ...] = ()
    """The simulated-user faults on this user turn, in the detector's order (none for a kind that detects none)."""
    references: tuple[ReferenceTurn, ...] = ()
    """On a simulated user's first turn: the real users' turns after the same context (human references of its item)."""
    marks: tuple[FaultMark, ...] = ()
    """Each detector's mark on this user turn: the rules' faults with their tag, a reviewer's tags with their severity."""

    @property
    def generated(self) -> bool:
        """Whether the simulated user wrote it (the turns judges label)."""
        return self.ordinal > 0


@dataclass(frozen=True)
class FaultMark:
    """One detector's finding on a user turn, as replay shows it: `tags` in the kind's taxonomy, `severity` where a
    reviewer gave one, `what` the rule's fault kind (empty for a reviewer), `evidence` what triggered it or the reason."""

    tags: tuple[str, ...]
    severity: str | None
    detector: str
    what: str = ""
    evidence: str = ""


@dataclass(frozen=True)
class EpisodeView:
    """An episode's messages as `TurnView`s, with how it ended."""

    run_id: str
    episode: EpisodeRecord
    judge: JudgeIdentity | None
    turns: tuple[TurnView, ...]
    faults_detected: bool = False
    """Whether the run's kind detects simulated-user faults, so its user turns are checked for them."""
    fault_problem: str = ""
    """Why some or all of the run's faults are not shown ("" when they were read)."""
    fault_names: Mapping[str, str] = field(default_factory=dict)
    """Each fault kind → its short name, in the detector's order."""

    @property
    def onset_position(self) -> int | None:
        """Position in `turns` of the drift onset, or None."""
        return next((i for i, t in enumerate(self.turns) if t.onset), None)

    @property
    def fault_positions(self) -> list[int]:
        """Positions in `turns` of the user turns that carry a fault, in order."""
        return [i for i, t in enumerate(self.turns) if t.faults]


def _marks(catalog, episode_id: str, turn_index: int, faults, judge) -> list[FaultMark]:
    """A user turn's marks: each flagged fault with the tag it counts under and who flagged it, then the reviewer's tags."""
    detector = catalog.detector
    if detector is None:
        return []
    tags, rules = getattr(detector, "rule_tags", {}), getattr(detector, "identity", "rules")
    ruled = set(catalog.faults.get(episode_id, ()))
    marks = [FaultMark((tags.get(f.kind, "other"),), None, rules if f in ruled else str(judge), f.kind, f.evidence) for f in faults]
    review = catalog.turn_reviews.get((episode_id, turn_index))
    if review is not None:
        marks.append(FaultMark(*review))
    return marks


def _perturbed_index(messages: list[Message], perturbation: str, first_generated: int | None) -> int | None:
    if perturbation == "none":
        return None
    answers = [m for m in messages
               if is_assistant(m) and m.spoken and (first_generated is None or m.turn_index < first_generated)]
    shared = [m for m in answers if m.reused_from]
    chosen = shared or answers
    return chosen[-1].turn_index if chosen else None


def _graph_dict(m: Message) -> dict:
    """`message_dict`, its content cut to `GRAPH_CHARS`."""
    found = message_dict(m)
    if len(m.content) > GRAPH_CHARS:
        found["content"] = m.content[:GRAPH_CHARS]
    return found


def _references(store: Store, run_id: str, episode: EpisodeRecord) -> tuple[ReferenceTurn, ...]:
    """The real users' next turns on a simulated episode's item (none for a reference episode itself)."""
    if episode.key.user_mode == HUMAN_MODE:
        return ()
    found = reference_turns(store, run_id, episode.key.item_id, user_mode=HUMAN_MODE)
    return tuple(r for r in found if is_user(r.message))


def episode_view(store: Store, catalog: RunCatalog, episode: EpisodeRecord, judge: JudgeIdentity | None) -> EpisodeView:
    """Read one episode's messages and put each in view: labels, source edge, onset and perturbation marks."""
    eid = episode.key.episode_id
    messages = store.messages(catalog.run_id, eid)
    generated = catalog.generated.get(eid, [])
    ordinal = {t: k for k, t in enumerate(generated, 1)}
    scored = catalog.scored_labels(judge) if judge is not None else {}
    chosen = {t: scored[(eid, t)] for t in generated if (eid, t) in scored}
    graph = episode_graph([_graph_dict(m) for m in messages], chosen)
    sources = {a: Source(d["kind"], b, d["weight"]) for a, b, d in graph.edges(data=True) if d["kind"] != "reply"}
    onset = next((t for t, data in graph.nodes(data=True) if data["onset"]), None)
    perturbed = _perturbed_index(messages, episode.key.perturbation, generated[0] if generated else None)
    faults: dict[int, list[FaultRow]] = {}
    for fault in catalog.episode_faults(eid, judge):
        faults.setdefault(fault.turn_index, []).append(fault)
    first_turn = generated[0] if generated else None
    references = _references(store, catalog.run_id, episode) if generated else ()
    callers: dict[str, int] = {}
    turns = []
    for m in messages:
        callers.update((c.id, m.turn_index) for c in m.tool_calls)
        turns.append(TurnView(m, ordinal.get(m.turn_index, 0), tuple(catalog.records(eid, m.turn_index)), sources.get(m.turn_index),
                              m.turn_index == onset, episode.key.perturbation if m.turn_index == perturbed else None,
                              callers.get(m.tool_result.call_id) if m.tool_result else None,
                              tuple(faults.get(m.turn_index, ())),
                              references if m.turn_index == first_turn else (),
                              tuple(_marks(catalog, eid, m.turn_index, faults.get(m.turn_index, ()), judge))))
    return EpisodeView(catalog.run_id, episode, judge, tuple(turns), catalog.faults_detected, catalog.fault_problem,
                       catalog.fault_names)
