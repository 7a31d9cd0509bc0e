"""The SQLite store: runs, episodes, messages, shared generations and labels, committed in small groups of finished episodes.

Everything that knows the tables is in this package: `Store` writes and reads records
(`testbed.store.records`), `testbed.store.labels` keeps judge labels and `testbed.store.frames`
gives a run as pandas frames for notebooks and reports.
"""

from testbed.store.records import (
    EpisodeKey,
    EpisodeOutcome,
    EpisodeReward,
    EpisodeRecord,
    FailedAttempt,
    JudgeIdentity,
    LabelRecord,
    LabelRow,
    RunRecord,
    SharedAnswer,
    TurnRecord,
    WireRecord,
)
from testbed.store.sqlite_store import Store, StoreError, default_store_path

__all__ = ["EpisodeKey", "EpisodeOutcome", "EpisodeReward", "EpisodeRecord", "FailedAttempt", "JudgeIdentity", "LabelRecord", "LabelRow",
           "RunRecord", "SharedAnswer", "Store", "StoreError", "TurnRecord", "WireRecord", "default_store_path"]
