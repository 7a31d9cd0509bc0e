"""The SQLite store: runs, episodes, messages and shared generations, committed per episode."""

from testbed.store.records import EpisodeKey, EpisodeOutcome, SharedAnswer
from testbed.store.sqlite_store import Store, default_store_path

__all__ = ["EpisodeKey", "EpisodeOutcome", "SharedAnswer", "Store", "default_store_path"]
