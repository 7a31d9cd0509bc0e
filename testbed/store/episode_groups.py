"""A run's finished episodes committed in groups: one transaction per ~50 ms of episodes, not one per episode.

A commit costs more CPU than writing a seven-turn episode, and a run of 1,000 concurrent
conversations finishes hundreds of episodes a second, so committing each one alone puts the store
on the run's hot path. Grouping keeps SQLite's guarantee where it matters: what was committed is
never lost or redone, and what a killed process loses is bounded (testbed.store.sqlite_store).
"""

from __future__ import annotations

import asyncio

from testbed.store.reader import StoreError
from testbed.store.records import EpisodeOutcome

GROUP_DELAY_S = 0.05
"""A group is committed at most this long after its first episode was written."""
GROUP_EPISODES = 64
"""A group is committed as soon as it holds this many episodes."""


class EpisodeGroups:
    """Writes one run's episodes into the store in groups and commits each group on time.

    A group is committed when it holds `max_episodes` (default GROUP_EPISODES), `max_delay_s`
    (default GROUP_DELAY_S) after its first episode (a timer on the running event loop, so a lone
    episode does not wait for company), and by `close`, which a run calls however it ends. Outside
    an event loop every episode is committed at once. A commit that fails on the timer is raised by
    the next `write` or by `close`, never lost.
    """

    def __init__(self, store, run_id: str, *, max_episodes: int | None = None, max_delay_s: float | None = None):
        self.store = store
        self.run_id = run_id
        self.max_episodes = GROUP_EPISODES if max_episodes is None else max_episodes
        self.max_delay_s = GROUP_DELAY_S if max_delay_s is None else max_delay_s
        self._pending = 0
        self._timer: asyncio.TimerHandle | None = None
        self._failed: BaseException | None = None

    def write(self, outcome: EpisodeOutcome) -> bool:
        """Write the episode into the open group; False when it had already finished (nothing written)."""
        self._raise_failed()
        written = self.store.add_episode(self.run_id, outcome)
        self._pending += 1
        if self._pending >= self.max_episodes:
            self.commit()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.commit()
            else:
                self._timer = loop.call_later(self.max_delay_s, self._commit_on_time)
        return written

    def commit(self) -> None:
        """Commit the open group now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = 0
        self.store.commit()

    def close(self) -> None:
        """Commit what is still open; raise a commit that failed earlier on the timer."""
        self.commit()
        self._raise_failed()

    def _commit_on_time(self) -> None:
        self._timer = None
        try:
            self.commit()
        except Exception as exc:
            self._failed = exc

    def _raise_failed(self) -> None:
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise StoreError(f"committing finished episodes of run {self.run_id} failed: {failed}") from failed
