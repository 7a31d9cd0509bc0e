"""Training data from judged runs: genuine follow-ups for SFT, follow-up-versus-failure pairs for DPO.

Both are for *user-turn generation* (CollabLLM-style simulated users): the prompt is the
conversation as the simulated user saw it, with true roles (`testbed.export.user_view`: the spoken
messages without system prompts, which are the generator's instructions, and without the
assistant's tool calls and tool results, which the user never saw; in dual-control tasks the
user's own tool calls and their results, in OpenAI chat form), and the completion is a user turn
the simulated user really wrote, verbatim from the store. Only generated user turns of finished episodes count, and only
with a scored label from the chosen judge; an unscored turn is never a positive or a negative.

- **SFT**: one conversation per user turn whose label is a positive label (default
  `genuine_followup`), ending in that turn (`{"messages": [...]}`, chat-messages format).
- **DPO**: one pair per positive and failure that answer the *same context*: the same messages
  before the turn (so the same item and the same answer, as a probe's variants share one answer),
  the same user mode, hence from different episodes (another sample or temperature). Each turn is
  used in at most one pair; within a context, positives and failures are paired in episode-id order.
  Rows follow TRL's conversational preference format: `prompt`, `chosen`, `rejected` message lists.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

from testbed.datasets.catalog import carries_canary
from testbed.export.user_view import user_contexts
from testbed.judges.taxonomy import taxonomy
from testbed.store import JudgeIdentity, Store
from testbed.store.frames import episodes_df, labels_df, messages_df
from testbed.store.records import CONDITIONS

KINDS = ("sft", "dpo")
META = ["item_id", *CONDITIONS, "sample_index"]
"""The episode columns every row carries about its turn (and that `--where` can filter on)."""


class ExportError(ValueError):
    """An export that cannot be made as asked; the message says what to change."""


@dataclass(frozen=True)
class ExportFilter:
    """Which turns may go into the data: positive labels, failure labels, the user model, conditions."""

    positive: tuple[str, ...] = ("genuine_followup",)
    """Labels that make a turn a positive (SFT row, DPO `chosen`)."""
    failures: tuple[str, ...] | None = None
    """Labels that make a turn a DPO `rejected`; None: every label that is not positive."""
    user_model: str | None = None
    """Keep turns whose user model contains this text."""
    where: tuple[tuple[str, str], ...] = ()
    """Episode columns (conditions, item_id) that must equal a value, compared as text."""
    include_canary: bool = False
    """Allow the text of datasets whose entry says it carries a canary string (GPQA, HealthBench)."""

    def check(self) -> None:
        """ExportError for an unknown label or filter column."""
        t = taxonomy()
        for label in (*self.positive, *(self.failures or ())):
            try:
                t.check(label)
            except ValueError as exc:
                raise ExportError(str(exc)) from None
        if self.failures is not None and set(self.failures) & set(self.positive):
            raise ExportError(f"labels {sorted(set(self.failures) & set(self.positive))} are both positive and failure")
        for column, _ in self.where:
            if column not in META:
                raise ExportError(f"unknown --where column {column!r}; columns: {', '.join(META)}")

    def failure_labels(self) -> frozenset[str]:
        """The labels that count as failures."""
        return frozenset(self.failures) if self.failures is not None else frozenset(taxonomy().labels) - set(self.positive)


@dataclass
class Export:
    """The rows of one export and what went into them, for the data card."""

    kind: str
    rows: list[dict]
    run_id: str
    judge: JudgeIdentity
    datasets: list[str]
    counts: dict[str, int] = field(default_factory=dict)


def _turn_table(store: Store, run_id: str, judge: JudgeIdentity, chosen: ExportFilter) -> pd.DataFrame:
    """The judged generated user turns of the chosen finished episodes, with label and episode columns."""
    episodes = episodes_df(store, run_id, exact=True)
    episodes = episodes[episodes.status == "done"]
    if chosen.user_model:
        episodes = episodes[episodes.user_model.str.contains(chosen.user_model, regex=False)]
    for column, value in chosen.where:
        episodes = episodes[episodes[column].astype(str) == value]
    canary = sorted(d for d in set(episodes.dataset) if carries_canary(d))
    if canary and not chosen.include_canary:
        raise ExportError(f"run {run_id} holds {', '.join(canary)} items, whose text carries a canary string meant to keep it "
                          "out of training data; pass --include-canary to export it anyway, or --where dataset=... to leave it out")
    messages = messages_df(store, run_id, exact=True)
    messages = messages[messages.episode_id.isin(set(episodes.episode_id))]
    labels = labels_df(store, run_id, judge, exact=True)
    labels = labels[(labels.status == "scored") & labels.label.notna()][["episode_id", "turn_index", "label"]]
    turns = messages[messages.generated_user_turn][["episode_id", "turn_index", "content"]]
    turns = turns.merge(labels, on=["episode_id", "turn_index"]).merge(episodes[["episode_id", *META]], on="episode_id")
    return turns


def _contexts(store: Store, run_id: str, turns: pd.DataFrame) -> dict[tuple[str, int], list[dict]]:
    """For every judged turn, the chat messages its user had seen before it (`testbed.export.user_view`)."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for eid, t in zip(turns.episode_id, turns.turn_index):
        wanted[eid].add(int(t))
    out = {}
    for eid, messages in store.iter_messages(run_id):
        if eid in wanted:
            out.update({(eid, t): context for t, context in user_contexts(messages, wanted[eid]).items()})
    return out


def _meta(turn, judge: JudgeIdentity, run_id: str) -> dict:
    return {"run_id": run_id, "episode_id": turn.episode_id, "turn_index": int(turn.turn_index), "label": turn.label,
            "judge": str(judge), **{c: getattr(turn, c) for c in META}}


def _context_key(context: list[dict], user_mode: str) -> str:
    return hashlib.sha256(json.dumps([user_mode, context], ensure_ascii=False).encode()).hexdigest()


def training_rows(store: Store, run_id: str, kind: str, judge: JudgeIdentity, chosen: ExportFilter = ExportFilter()) -> Export:
    """The SFT or DPO rows of a judged run (see the module docstring for what each holds)."""
    if kind not in KINDS:
        raise ExportError(f"unknown export kind {kind!r}; use one of {', '.join(KINDS)}")
    chosen.check()
    turns = _turn_table(store, run_id, judge, chosen)
    contexts = _contexts(store, run_id, turns)
    positive, failures = set(chosen.positive), chosen.failure_labels()
    rows: list[dict] = []
    if kind == "sft":
        for t in turns[turns.label.isin(positive)].itertuples(index=False):
            context = contexts[(t.episode_id, int(t.turn_index))]
            rows.append({"messages": [*context, {"role": "user", "content": t.content}], **_meta(t, judge, run_id)})
    else:
        groups: dict[str, dict[str, list]] = defaultdict(lambda: {"chosen": [], "rejected": []})
        for t in turns.sort_values(["episode_id", "turn_index"]).itertuples(index=False):
            side = "chosen" if t.label in positive else "rejected" if t.label in failures else None
            if side is not None:
                groups[_context_key(contexts[(t.episode_id, int(t.turn_index))], t.user_mode)][side].append(t)
        for group in groups.values():
            for good, bad in zip(group["chosen"], group["rejected"]):
                rows.append({"prompt": contexts[(good.episode_id, int(good.turn_index))],
                             "chosen": [{"role": "user", "content": good.content}],
                             "rejected": [{"role": "user", "content": bad.content}],
                             "chosen_meta": _meta(good, judge, run_id), "rejected_meta": _meta(bad, judge, run_id)})
    counts = {"judged_turns": len(turns), "positive_turns": int(turns.label.isin(positive).sum()),
              "failure_turns": int(turns.label.isin(failures).sum()), "rows": len(rows)}
    return Export(kind, rows, run_id, judge, sorted(set(turns.dataset)), counts)
