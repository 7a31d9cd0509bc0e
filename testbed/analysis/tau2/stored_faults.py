"""The τ² kind's fault detector: its rules run once over a finished run and their faults are stored (testbed.store.user_faults).

`RULES` names the rules of testbed.scenarios.tau2.user_faults and their version; change `RULES_VERSION` whenever a rule
changes what it flags, so stored faults say which rules found them. The rules need τ²'s task of each episode, so
storing needs τ² installed; reading never does. Role drift is the judge's: `store_judged_faults` stores a judge's
drift labels as faults under the judge's identity, on the episodes the rules checked.

A run stored before faults were (or an episode the run loop could not check: τ² missing, the run stopped before
its end) has episodes without stored faults. Readers then detect those in memory when τ² is installed, the
numbers the same as stored ones would give, and say otherwise how to store them (`missing`): `testbed judge RUN`
or `testbed review-faults RUN` store them on their way.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from testbed.scenarios.tau2.fault_tags import RULE_TAGS, SEVERITY_MEANINGS, TAG_MEANINGS
from testbed.scenarios.tau2.user_faults import FAULT_KINDS, UserFault
from testbed.specs.tau2 import domain_of
from testbed.store import Store
from testbed.store.frames import episodes_df
from testbed.store.labels import JudgeIdentity, labels_frame
from testbed.store.user_faults import FaultRow, checked_episodes, faults_df, write_faults

RULES_VERSION = "2"
"""The version of the rules in testbed.scenarios.tau2.user_faults; a new one marks faults stored before as older."""
RULES = JudgeIdentity("tau2-user-rules", RULES_VERSION)
"""The identity stored with every fault the rules find."""
FAULT_MEANINGS = {
    "premature_stop": "the user ended the conversation while work it had asked for was still undone",
    "revealed_early": "the user volunteered a piece of its information before the agent asked for it",
    "invented_fact": "the user stated an id, number, name, amount or state that nothing it knew or saw supports",
    "ungrounded_device_claim": "the user reported a state of its device before anything it checked showed that state",
    "role_drift": "the user stopped speaking as the customer (it echoed the agent or planned aloud)",
}
"""What each fault kind means, in the words a fault reviewer reads (testbed.judges.fault_review)."""
FAULT_NAMES = {"premature_stop": "premature", "revealed_early": "early", "invented_fact": "invented",
               "ungrounded_device_claim": "ungrounded", "role_drift": "drift"}
"""The short name replay's table shows for each fault kind (`FAULT_KINDS`, in its order); each is a part of its kind's
name, so `fault=invented` and `fault=invented_fact` find the same episodes."""


def _task(dataset: str, item_id: str):
    """τ²'s task of an episode, or None when its dataset is no τ² domain, τ² is not installed, or it lacks the task."""
    from testbed.scenarios.tau2.domains import domain, tau2_installed

    name = domain_of(dataset)
    if name is None or not tau2_installed():
        return None
    return domain(name).tasks.get(item_id)


def detect(store: Store, run_id: str, skip: set[str] = frozenset()) -> tuple[set[str], list[FaultRow]]:
    """The rules run over the run's episodes (but `skip`) whose task the installed τ² has: the episodes checked and
    their faults in episode and turn order. Nothing when τ² is not installed."""
    from testbed.scenarios.tau2.domains import tau2_installed
    from testbed.scenarios.tau2.user_faults import detect_faults

    if not tau2_installed():
        return set(), []
    by_id = {e.episode_id: e for e in episodes_df(store, run_id, exact=True).itertuples(index=False) if e.episode_id not in skip}
    if not by_id:
        return set(), []
    checked, rows = set(), []
    for eid, messages in store.iter_messages(run_id, include_errored=True):
        e = by_id.get(eid)
        task = _task(e.dataset, e.item_id) if e is not None else None
        if task is not None:
            checked.add(eid)
            rows += [FaultRow(eid, f.turn_index, f.kind, f.evidence) for f in detect_faults(task, messages, e.termination or "")]
    return checked, sorted(rows, key=lambda r: r.episode_id)


def from_labels(labels: Mapping[tuple[str, int], str]) -> list[FaultRow]:
    """The `role_drift` faults a judge's scored labels by (episode id, turn index) imply: one on each turn labelled with a
    drift label (`taxonomy().drift_labels`), the label its evidence; in episode and turn order."""
    from testbed.judges.taxonomy import taxonomy

    drift = taxonomy().drift_labels
    return sorted((FaultRow(eid, int(turn), "role_drift", label) for (eid, turn), label in labels.items() if label in drift),
                  key=lambda r: (r.episode_id, r.turn_index))


def drift_faults(store: Store, run_id: str, judge: JudgeIdentity, episodes: set[str]) -> list[FaultRow]:
    """`judge`'s latest scored label on each user turn of `episodes`, as the faults it implies (`from_labels`)."""
    labels = labels_frame(store, run_id, judge)
    labels = labels[(labels.status == "scored") & labels.label.notna() & labels.episode_id.isin(episodes)]
    return from_labels({(eid, int(turn)): label for eid, turn, label in zip(labels.episode_id, labels.turn_index, labels.label)})


class Tau2FaultDetector:
    """The τ² kind's `FaultDetector` (testbed.specs.kind_views); its review vocabulary is τ²'s taxonomy (fault_tags)."""

    names = FAULT_NAMES
    meanings = FAULT_MEANINGS
    tags = TAG_MEANINGS
    severities = SEVERITY_MEANINGS
    rule_tags = RULE_TAGS
    identity = str(RULES)
    """The rules' identity, as replay marks the faults they flag."""

    def review_contexts(self, store: Store, run_id: str) -> tuple[dict[str, tuple[str, str]], str]:
        """Each finished episode's user instructions and simulation guidelines, read from τ² (`review_context`)."""
        from testbed.analysis.tau2.review_context import review_contexts

        return review_contexts(store, run_id)

    def store_faults(self, store: Store, run_id: str) -> int:
        """Run the rules over the run's episodes not yet checked and store what they find; how many were checked."""
        checked, rows = detect(store, run_id, skip=checked_episodes(store, run_id))
        if checked:
            write_faults(store, run_id, RULES, checked, rows)
        return len(checked)

    def store_judged_faults(self, store: Store, run_id: str, judge: JudgeIdentity) -> int:
        """Store `judge`'s drift labels as faults on the episodes the rules checked (the rules' faults first, where
        τ² can store them); how many episodes the judge's faults cover."""
        self.store_faults(store, run_id)
        episodes = checked_episodes(store, run_id)
        if episodes:
            write_faults(store, run_id, judge, episodes, drift_faults(store, run_id, judge, episodes), judged=True)
        return len(episodes)

    def from_labels(self, labels: Mapping[tuple[str, int], str]) -> list[FaultRow]:
        """The faults a judge's scored labels imply (role drift), read off labels already in memory (`from_labels`)."""
        return from_labels(labels)

    def read(self, store: Store, run_id: str) -> tuple[list[FaultRow], str]:
        """The rules' faults of the run in episode and turn order (stored, or detected now where τ² can), and why some
        finished episodes show none although they may have some ("" when every one was read: `missing`)."""
        checked, found = run_faults(store, run_id, None)
        return [FaultRow(eid, f.turn_index, f.kind, f.evidence) for eid, f in found], self.missing(store, run_id, checked)

    def missing(self, store: Store, run_id: str, checked: set[str] | None = None) -> str:
        """Why some finished episodes have no faults, stored or detectable now (τ² not installed), and how to store
        them; "" when none lacks them, or τ² is installed (an episode whose task it lacks has none to find)."""
        from testbed.scenarios.tau2.domains import INSTALL, tau2_installed

        if tau2_installed():
            return ""
        done = set(episodes_df(store, run_id, exact=True).query("status == 'done'").episode_id)
        unchecked = done - (checked_episodes(store, run_id) if checked is None else checked)
        if not unchecked:
            return ""
        return (f"the user faults of {len(unchecked)} of {len(done)} finished episodes are not stored and τ² is not installed "
                f"to read them ({INSTALL}); then `testbed judge {run_id}` stores them")


DETECTOR = Tau2FaultDetector()
"""The τ² kind's fault detector."""


def run_faults(store: Store, run_id: str, judge: JudgeIdentity | None) -> tuple[set[str], list[tuple[str, UserFault]]]:
    """The episodes whose faults are known and every fault of them (episode id, fault) in episode, turn and FAULT_KINDS
    order, stored or (for episodes without stored faults, with
    τ² installed) detected now; a judge's drift faults, stored or read off its labels, when `judge` is given."""
    checked = checked_episodes(store, run_id)
    frame = faults_df(store, run_id)
    late, rows = detect(store, run_id, skip=checked)
    checked |= late
    faults = [UserFault(r.kind, r.turn_index, r.evidence) for r in frame.itertuples(index=False)]
    episodes = list(frame.episode_id) + [r.episode_id for r in rows]
    faults += [UserFault(r.kind, r.turn_index, r.evidence) for r in rows]
    if judge is not None:
        drift = _judged(store, run_id, judge, checked)
        episodes += list(drift.episode_id)
        faults += [UserFault(r.kind, r.turn_index, r.evidence) for r in drift.itertuples(index=False)]
    order = sorted(range(len(faults)), key=lambda i: (episodes[i], faults[i].turn_index, FAULT_KINDS.index(faults[i].kind)))
    return checked, [(episodes[i], faults[i]) for i in order]


def _judged(store: Store, run_id: str, judge: JudgeIdentity, checked: set[str]) -> pd.DataFrame:
    """The judge's drift faults on the checked episodes: stored, or read off its labels where none are stored."""
    stored = checked_episodes(store, run_id, judge)
    frame = faults_df(store, run_id, judge)
    frame = frame[(frame.detector == str(judge)) & frame.episode_id.isin(checked)]
    rest = drift_faults(store, run_id, judge, checked - stored)
    extra = pd.DataFrame([(r.episode_id, r.turn_index, r.kind, r.evidence) for r in rest],
                         columns=["episode_id", "turn_index", "kind", "evidence"])
    return pd.concat([frame[extra.columns], extra], ignore_index=True) if len(extra) else frame
