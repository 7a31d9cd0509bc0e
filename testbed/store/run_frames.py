"""One run (and one judge) as frames, each read from the store once: what a command hands its tables.

A report, a comparison, a figure or the replay app asks the same run for its episodes, turns and
labels many times over; reading them afresh each time is what made a comparison read a baseline's
turns once per framework. `RunFrames` reads each frame the first time it is asked for and keeps it:

    frames = RunFrames(store, run_id, judge)
    frames.episodes, frames.turns, frames.labels      # each one query, however often asked

`with_judge` gives the same run under another judge, sharing every frame that does not depend on
the judge (episodes, messages, turns, faults without a judge, rewards). Frames are given as shallow
copies, so a caller may add columns without changing what the next caller sees. Frames that higher
layers derive from these (a report's episode table) are kept with `derived`, once per run.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from operator import itemgetter
from typing import Any

import pandas as pd

from testbed.store.frames import EPISODE_COLUMNS, JUDGE_COLUMNS, TURN_COLUMNS, episode_ends_df, episodes_df, messages_df
from testbed.store.labels import LABEL_COLUMNS, labels_frame
from testbed.store.reader import episode_turns
from testbed.store.records import JudgeIdentity, RunRecord
from testbed.store.sqlite_store import Store
from testbed.store.user_faults import FAULT_COLUMNS, faults_df
from testbed.transcript import SYSTEM, TOOL_CALLS_COLUMN

__all__ = ["FAULT_COLUMNS", "REWARD_COLUMNS", "RunFrames"]

REWARD_COLUMNS = ["episode_id", "reward", "breakdown", "details"]
"""The columns of a run's rewards: the evaluator's reward of each episode, its parts and what it checked."""


class RunFrames:
    """One run and (optionally) one judge's labels, its frames read lazily and once.

    `run_id` is the run's full id; a run not in the store gives empty frames (`run` is None), as an
    empty run does. `judge` is whose labels `labels`, `judged_turns` and judge-dependent `faults` are.
    """

    def __init__(self, store: Store, run_id: str, judge: JudgeIdentity | None = None, *, _cache: dict | None = None):
        self.store = store
        self.run_id = run_id
        self.judge = judge
        self._cache: dict[Any, Any] = {} if _cache is None else _cache

    def __repr__(self) -> str:
        return f"RunFrames({self.run_id!r}, judge={self.judge})"

    def with_judge(self, judge: JudgeIdentity | None) -> RunFrames:
        """The same run under `judge`, sharing every frame already read (those of each judge are kept apart)."""
        return self if judge == self.judge else RunFrames(self.store, self.run_id, judge, _cache=self._cache)

    def _once(self, key: Any, read: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]

    def _frame(self, key: Any, read: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        return self._once(key, read).copy(deep=False)

    def derived(self, key: Any, build: Callable[[], Any]) -> Any:
        """What `build()` gives, built the first time `key` is asked for on this run and kept: for frames a higher
        layer derives from these. A key that depends on the judge must name it (`(name, frames.judge)`)."""
        value = self._once(("derived", key), build)
        return value.copy(deep=False) if isinstance(value, pd.DataFrame) else value

    @property
    def run(self) -> RunRecord | None:
        """The run's record (spec, kind, framework, status), or None when the store has no such run."""
        return self._once("run", lambda: self.store.find_run(self.run_id))

    @property
    def kind(self) -> str | None:
        """The name of the run's scenario kind (`testbed.specs.registries.KINDS`), None for a run not in the store."""
        return self.run.kind if self.run is not None else None

    @property
    def episodes(self) -> pd.DataFrame:
        """One row per episode with every stored column, finished ones first (`testbed.store.frames.episodes_df`)."""
        return self._frame("episodes", lambda: episodes_df(self.store, self.run_id, exact=True))

    @property
    def episode_ends(self) -> pd.DataFrame:
        """Each episode's request and final user turn, aggregated in SQL (`testbed.store.frames.episode_ends_df`)."""
        return self._frame("episode_ends", lambda: episode_ends_df(self.store, self.run_id, exact=True))

    @property
    def messages(self) -> pd.DataFrame:
        """One row per message, in episode and turn order (`testbed.store.frames.messages_df`)."""
        return self._frame("messages", lambda: messages_df(self.store, self.run_id, exact=True))

    @property
    def turns(self) -> pd.DataFrame:
        """One row per generated user turn (errored episodes too) with its context and its episode's item, conditions
        and status: `testbed.store.frames.turns_df` without a judge. `status == "done"` keeps the turns judges label."""
        return self._frame("turns", self._read_turns)

    def _read_turns(self) -> pd.DataFrame:
        """The turns `Store.turns` gives (errored episodes too), taken from `messages` rather than read again."""
        messages = self.messages
        spoken = messages.loc[messages.role != SYSTEM, ["episode_id", "turn_index", "role", "speaker", "content", TOOL_CALLS_COLUMN]]
        rows = spoken.astype(object).where(spoken.notna(), None).to_dict("records")
        turns = pd.DataFrame([(t.episode_id, t.turn_index, t.question, t.answer, t.user_turn)
                              for eid, group in groupby(rows, key=itemgetter("episode_id"))
                              for t in episode_turns(eid, list(group))], columns=TURN_COLUMNS)
        turns = turns.astype({"turn_index": "int64"})
        return turns.merge(self.episodes[["episode_id", *EPISODE_COLUMNS]], on="episode_id", how="left")

    @property
    def turn_keys(self) -> pd.DataFrame:
        """(episode_id, turn_index) of the finished episodes' generated user turns, in episode and turn order: the
        turns judges label, as `Store.turn_keys` gives them."""
        def keys() -> pd.DataFrame:
            done = self.turns[self.turns.status == "done"].sort_values(["episode_id", "turn_index"])
            return done[["episode_id", "turn_index"]].reset_index(drop=True)
        return self._frame("turn_keys", keys)

    @property
    def labels(self) -> pd.DataFrame:
        """The judge's latest verdict per turn (`testbed.store.labels.labels_frame`); empty, same columns, without a judge."""
        if self.judge is None:
            return pd.DataFrame(columns=LABEL_COLUMNS)
        return self._frame(("labels", self.judge), lambda: labels_frame(self.store, self.run_id, self.judge))

    @property
    def judged_turns(self) -> pd.DataFrame:
        """`turns` with the judge's verdict on each (judge_status, judge_label, judge_followup, judge_reason; NaN where
        it gave none): `testbed.store.frames.turns_df` with the judge. Without a judge, `turns` as they are."""
        if self.judge is None:
            return self.turns

        def merged() -> pd.DataFrame:
            labels = self.labels[["episode_id", "turn_index", "status", "label", "followup", "reason"]]
            labels = labels.rename(columns=dict(zip(["status", "label", "followup", "reason"], JUDGE_COLUMNS)))
            return self.turns.merge(labels, on=["episode_id", "turn_index"], how="left")
        return self._frame(("judged_turns", self.judge), merged)

    @property
    def faults(self) -> pd.DataFrame:
        """The run's stored simulated-user faults (`testbed.store.user_faults.faults_df`: `FAULT_COLUMNS`), the judge's
        judge-dependent ones (role drift under its labels) included."""
        return self._frame(("faults", self.judge), lambda: faults_df(self.store, self.run_id, self.judge))

    @property
    def rewards(self) -> pd.DataFrame:
        """The evaluator's reward of every episode that has one (τ² tasks; empty for other kinds), `REWARD_COLUMNS`."""
        def read() -> pd.DataFrame:
            rows = [(eid, r.reward, r.breakdown, r.details) for eid, r in self.store.rewards(self.run_id).items()]
            return pd.DataFrame(rows, columns=REWARD_COLUMNS)
        return self._frame("rewards", read)

    @property
    def cost(self) -> tuple[float, float] | None:
        """The run's wall-clock seconds and client CPU seconds (`Store.run_cost`), None when not recorded."""
        return self._once("cost", lambda: self.store.run_cost(self.run_id))
