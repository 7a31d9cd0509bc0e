"""What a scenario kind shows of its runs beyond what every kind shows: its views.

A kind's entry (`ScenarioKindEntry.views`) names one `KindViews` entry (registered in testbed/entries.py, loaded on
first use: `testbed.specs.registries.kind_views`); a kind
without one has `NO_VIEWS`, and report, compare, replay and the run loop then show and do only what every kind
does. Nothing outside a kind asks which kind a run is: it asks the kind's views, and an empty view adds nothing.

- `faults`: the kind's per-turn simulated-user fault detector (`FaultDetector`), which the run loop asks to store
  a finished run's faults and `testbed judge` the faults a judge's labels imply; replay marks the stored ones. It
  also gives a whole-conversation reviewer (`review-faults --whole`) its vocabulary (`tags`, `severities`), what
  each episode's user was told (`review_contexts`), and the tag each of its rules' fault kinds counts under.
- `compare_cells(run)`: a comparison row's extra cells, from the run's `RunFrames` (its judge's, for judge-dependent
  cells); `compare_paired(run, baseline)`: the extra cells of a row paired with the baseline's run; and
  `compare_columns(frame)`: the headers and cell formatters of those cells, as two lists, the first shown after
  the comparison's lead columns (framework, episodes, errors) and the second last.
- `simulator_gap(run, reference)`: a row's extra cells against a reference run of the same assistant (the kind's
  scripted user), and `reference_user(scenario)`: the agent and backend of that reference user (`compare --simulator-gap`).
- `errored_as`: the ways the kind's report may count errored episodes, the first the default (`report --errored`).
- `report_columns`, `report_groups`, `report_right`: how the report's renderer shows the columns the kind's report
  (its REPORTS entry) adds: headers and formatters, the tables they are grouped in, which are right-aligned.
- `annotation_turns(store, run_id)`: a function of a stored turn giving what annotators see of it (None: not an
  item), for a kind whose turns are not all items or hold text that may not be committed
  (`testbed.analysis.judge_quality.labelset.annotation_items`).

Every field is optional, so a kind declares only the views it has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class FaultDetector(Protocol):
    """A kind's per-turn simulated-user fault detector, stored with its identity (testbed.store.user_faults)."""

    names: Mapping[str, str]
    """Each fault kind it flags → its short name (replay's marks and filter), in the order reports show them."""
    meanings: Mapping[str, str]
    """Each fault kind → what it means, in the words a fault reviewer reads (testbed.judges.fault_review)."""
    tags: Mapping[str, str]
    """Each error tag a whole-conversation reviewer may give a user turn → what it means (testbed.judges.conversation_review)."""
    severities: Mapping[str, str]
    """Each severity such a reviewer gives a user turn with an error → what it means."""
    rule_tags: Mapping[str, str]
    """Each fault kind its rules flag → the error tag it counts under, so rules and reviewer are compared tag by tag."""

    def review_contexts(self, store: Any, run_id: str) -> tuple[dict[str, tuple[str, str]], str]:
        """Each finished episode's (user's instructions, simulation guidelines the user was given), as a whole-conversation
        reviewer is shown them, and why some finished episodes have none ("" when none lacks them)."""

    def store_faults(self, store: Any, run_id: str) -> int:
        """Detect and store the faults of the run's episodes not yet checked; how many episodes it checked now."""

    def store_judged_faults(self, store: Any, run_id: str, judge: Any) -> int:
        """Store the faults `judge`'s labels imply on the run's episodes (role drift); how many episodes it checked."""

    def read(self, store: Any, run_id: str) -> tuple[list, str]:
        """The faults its rules found in the run (`testbed.store.user_faults.FaultRow`s, stored or, where it can, detected
        now) in episode and turn order, and why some episodes show none although they may have some ("" when none)."""

    def from_labels(self, labels: Mapping[tuple[str, int], str]) -> list:
        """The faults a judge's scored labels by (episode id, turn index) imply, as `FaultRow`s in episode and turn order."""

    def missing(self, store: Any, run_id: str) -> str:
        """Why some of the run's finished episodes show no faults and how to store them; "" when none lacks them."""


@dataclass(frozen=True)
class KindViews:
    """A kind's views (module docstring); each None or empty when the kind has no such view."""

    name: str
    """The name it is registered under in testbed.specs.registries.VIEWS."""
    faults: FaultDetector | None = None
    """Its per-turn simulated-user fault detector."""
    compare_cells: Callable[..., dict] | None = None
    """`(run: RunFrames) -> {column: value}`: a comparison row's extra cells."""
    compare_paired: Callable[..., dict] | None = None
    """`(run: RunFrames, baseline: RunFrames) -> {column: value}`: the extra cells of a row paired with the baseline."""
    compare_columns: Callable[..., tuple[list, list]] | None = None
    """`(frame) -> (middle, last)`: (header, formatter) pairs of those cells, after the lead columns and at the end."""
    simulator_gap: Callable[..., dict] | None = None
    """`(run: RunFrames, reference: RunFrames) -> {column: value}`: the reward a row lost to its simulated user."""
    reference_user: Callable[..., Any] | None = None
    """`(scenario) -> ResolvedAgent | None`: the reference user the simulator gap is measured against."""
    errored_as: tuple[str, ...] = ()
    """How its report may count errored episodes (`report --errored`), the default first."""
    report_columns: tuple = ()
    """(header, report column, formatter) of its report's own columns, shown after the episode columns when present."""
    report_groups: tuple = ()
    """(table name, headers) of the tables its report's own columns are grouped into, in order."""
    report_right: frozenset[str] = frozenset()
    """Its headers whose cells are right-aligned."""
    annotation_turns: Callable[..., Any] | None = None
    """`(store, run_id) -> (TurnRecord) -> TurnRecord | None`: what annotators see of each stored turn, None to leave it out."""


NO_VIEWS = KindViews("none")
"""The views of a kind that declares none: nothing beyond what every kind shows."""
