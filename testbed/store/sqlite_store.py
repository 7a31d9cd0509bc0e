"""SQLite in WAL mode: finished episodes are committed in small groups, so a killed run loses at most the last one.

A run writes its episodes through `testbed.store.episode_groups.EpisodeGroups`: one transaction
holds the episodes that finish within `GROUP_DELAY_S` (50 ms) of the group's first, at most
`GROUP_EPISODES` (64) of them, and is committed then, and always before the run returns, fails or
is interrupted (Ctrl-C, SIGTERM, a cancelled task). With `synchronous=NORMAL` a committed group
survives the process being killed (SIGKILL, a crash of the program); a killed run therefore loses
its episodes in flight and those finished in the last 50 ms at most, and a resumed run redoes
exactly those, never a committed one. (A power cut may also lose the last commits, as WAL with
NORMAL allows; the store stays consistent.) One commit per group instead of per episode is what
keeps the store off the hot path of a run of 1,000 concurrent conversations.

The store is append-only in what it records: a finished episode is never replaced, labels are
appended (fault reviews too), and an errored attempt that a retry replaces is first copied to `failed_attempts`.
Reads live in `testbed.store.reader` (inherited by `Store`) and `testbed.store.frames`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import orjson

from testbed.redaction import redact, redact_secrets_only
from testbed.specs.registries import default_framework
from testbed.store import lease
from testbed.store.fault_reviews import FaultReviewStore
from testbed.store.turn_reviews import TurnReviewStore
from testbed.store.problems import damaged, read_only_message, store_problem, writable
from testbed.store.reader import StoreError, StoreReader, message_from_row
from testbed.store.records import EpisodeOutcome, SharedAnswer, WireRecord
from testbed.store.schema import DDL, SCHEMA_VERSION, TABLES, UPGRADABLE_FROM, messages_upgrade
from testbed.store.text import storable
from testbed.store.tool_messages import tool_columns
from testbed.store.wal_snapshot import holds_commits, snapshot, wal_of
from testbed.transcript import Message


RUN_COST_BOOKING_S = 1.0
"""How often a run books its wall and CPU time while it lasts (and once more as it ends, SIGTERM and Ctrl-C included):
a process killed with SIGKILL, which books nothing more, loses at most this much of its share, even in its first
seconds. One UPDATE of one row a second costs nothing beside the episodes."""


def default_store_path() -> Path:
    """`$TESTBED_STORE`, else `.testbed/store.sqlite` under the current folder (like ./mlruns)."""
    return Path(os.environ.get("TESTBED_STORE", Path(".testbed") / "store.sqlite"))


def now() -> str:
    """UTC timestamp in ISO format, the store's one time format."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Store(StoreReader, FaultReviewStore, TurnReviewStore):
    """Reads and writes runs; one connection, used from one thread (the event loop's).

    `readonly=True` opens an existing store without writing anything to it (reports, listings,
    graphs), so a store on a read-only disk or shared by a running writer can be read. A store
    opened for reading must exist: a mistyped path is an error, never a new empty store.
    """

    def __init__(self, path: Path | str | None = None, *, readonly: bool = False):
        self.path = Path(path) if path is not None else default_store_path()
        self.readonly = readonly
        self.notice: str | None = None
        """Set when the store opened but cannot be read whole (a reader in a read-only folder): what is missing."""
        self._snapshot = None
        self._leases: dict[str, str] = {}
        if readonly and not self.path.is_file():
            raise StoreError(f"no store at {self.path}: run `testbed run` first, or pass --store (or $TESTBED_STORE) with the right path")
        if not readonly and self.path.is_dir():
            raise StoreError(f"{self.path} is a directory: --store takes the path of a SQLite file")
        try:
            self._open(immutable=False)
        except sqlite3.Error as exc:
            if not (readonly and not damaged(exc) and not writable(self.path)):
                raise StoreError(store_problem(self.path, exc)) from None
            try:
                self._open(immutable=True)
            except sqlite3.Error as again:
                raise StoreError(store_problem(self.path, again)) from None

    def _open(self, *, immutable: bool) -> None:
        """Connect and check the schema. A reader of a store it could not open in a read-only folder opens it
        `immutable` (SQLite then creates no shared-memory file, and nobody can be writing a file there), or, when
        its WAL holds commits that immutable would skip, reads a private copy of the file and the WAL
        (`testbed.store.wal_snapshot`); if no copy can be made, `notice` says what the reading misses."""
        if self.readonly:
            source, flags = self.path, "mode=ro&immutable=1" if immutable else "mode=ro"
            if immutable and holds_commits(self.path):
                try:
                    source, self._snapshot = snapshot(self.path)
                    flags = "mode=ro"
                except OSError as exc:
                    self.notice = (f"the last commits of {self.path} are in {wal_of(self.path)}, which SQLite cannot read in "
                                   f"this read-only folder, and no copy could be made ({exc}): they are not shown. Copy the "
                                   "store and its -wal file to a writable folder to see them.")
            self.conn = sqlite3.connect(f"{source.resolve().as_uri()}?{flags}", uri=True, timeout=30)
        else:
            if not writable(self.path) and self.path.parent.exists():
                raise StoreError(read_only_message(self.path))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, timeout=30)
        self.conn.row_factory = sqlite3.Row
        try:
            self._check_schema()
        except BaseException:
            self.close()
            raise

    def _check_schema(self) -> None:
        has_meta = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() if has_meta else None
        version = int(row[0]) if row is not None else None
        if version is not None and version != SCHEMA_VERSION and version not in UPGRADABLE_FROM:
            raise StoreError(f"{self.path} has schema version {version}, this testbed reads {SCHEMA_VERSION}: use another --store")
        if self.readonly:
            if version is None:
                raise StoreError(f"{self.path} is not a testbed store (no schema): check --store")
            self.schema_version = version
            return
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version != SCHEMA_VERSION or not TABLES <= tables:
            with self.conn:
                if "messages" in tables and not self._has_column("messages", "tool_calls_json"):
                    self.conn.execute("PRAGMA foreign_keys=OFF")
                    self.conn.executescript("BEGIN;" + messages_upgrade() + "COMMIT;")
                    self.conn.execute("PRAGMA foreign_keys=ON")
                self.conn.executescript(DDL)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        self.schema_version = SCHEMA_VERSION

    def _has_column(self, table: str, column: str) -> bool:
        return any(r[1] == column for r in self.conn.execute(f"PRAGMA table_info({table})"))

    def acquire_lease(self, run_id: str, work: str | None = None) -> None:
        """Become the run's one writer (or the one holder of another key, `work` saying what for), or raise
        StoreError naming the live process that is."""
        try:
            self._leases[run_id] = lease.acquire(self.conn, run_id, work)
        except lease.RunBusy as exc:
            raise StoreError(str(exc)) from None

    def heartbeat(self, run_id: str) -> None:
        """Renew this process's lease on the run (StoreError if another process took it over)."""
        token = self._leases.get(run_id)
        if token is not None:
            self.commit()
            with self.conn:
                self._renew(run_id, token)

    def _renew(self, run_id: str, token: str) -> None:
        try:
            lease.renew(self.conn, run_id, token)
        except lease.LeaseLost as exc:
            self._leases.pop(run_id, None)
            raise StoreError(str(exc)) from None

    def holds_lease(self, run_id: str) -> bool:
        """Whether this process holds the run's lease (and so may record how the run ended)."""
        return run_id in self._leases

    def release_lease(self, run_id: str) -> None:
        """Give up the run's lease, if this process holds it."""
        token = self._leases.pop(run_id, None)
        if token is not None:
            lease.release(self.conn, run_id, token)

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite), and delete the private copy a reader may have read."""
        self.conn.close()
        if self._snapshot is not None:
            self._snapshot.cleanup()
            self._snapshot = None

    def resumable_run_id(self, run_id: str, legacy_run_id: str) -> str:
        """The id a spec's run goes under: `run_id`, unless the store holds no run of that id but one under
        `legacy_run_id`, the id the same spec had before run ids left out where servers live; then that one, so a
        run made before keeps resuming (under its old id, which it keeps for good)."""
        if legacy_run_id != run_id and not self.run_exists(run_id) and self.run_exists(legacy_run_id):
            return legacy_run_id
        return run_id

    def run_fingerprint(self, run_id: str) -> str | None:
        """The spec hash the run was made with (None when there is no such run): says whether it was made before run
        ids left out where servers live, and so which episode ids it has."""
        row = self.conn.execute("SELECT fingerprint FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return row[0] if row is not None else None

    def begin_run(self, run_id: str, *, scenario: str, kind: str, spec: dict, fingerprint: str,
                  versions: dict, git_revision: str | None, planned: int, framework: str = default_framework(),
                  legacy_fingerprint: str | None = None) -> bool:
        """Create the run, or mark an existing one running again; True when it already existed.

        A run belongs to one framework: resuming it under another is refused. An existing run resumes when its
        stored fingerprint is the spec's, or the spec's `legacy_fingerprint` (a run made before run ids left out
        where servers live, which keeps the fingerprint it was made with).
        """
        existing = self.conn.execute("SELECT fingerprint FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if existing is not None and (stored := self.framework_of(run_id)) != framework:
            raise StoreError(f"run {run_id} was run with framework {stored}, not {framework}: pass another --run-id")
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO run_frameworks (run_id, framework) VALUES (?, ?)", (run_id, framework))
            if existing is None:
                self.conn.execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,NULL,'running',?)",
                    (run_id, scenario, kind, json.dumps(spec), fingerprint, json.dumps(versions), git_revision, now(), planned),
                )
                return False
            if existing["fingerprint"] not in (fingerprint, legacy_fingerprint):
                raise StoreError(f"run {run_id} exists with a different spec: pass another --run-id to start a new run")
            self.conn.execute("UPDATE runs SET status='running', finished_at=NULL, planned_episodes=? WHERE run_id=?", (planned, run_id))
            return True

    def add_run_cost(self, run_id: str, wall_s: float, client_cpu_s: float) -> None:
        """Add one invocation's wall time and the client process's CPU time to the run's totals."""
        with self.conn:
            self.conn.execute("UPDATE run_frameworks SET wall_s = wall_s + ?, client_cpu_s = client_cpu_s + ? WHERE run_id=?",
                              (wall_s, client_cpu_s, run_id))

    def finish_run(self, run_id: str, status: str) -> None:
        """Record how the run ended (`done`, `incomplete`, `interrupted`, `failed`)."""
        with self.conn:
            self.conn.execute("UPDATE runs SET status=?, finished_at=? WHERE run_id=?", (status, now(), run_id))

    def write_episode(self, run_id: str, outcome: EpisodeOutcome) -> bool:
        """Store the episode's outcome and commit it (with any group still open); False when it already finished.

        The one-episode form of `add_episode` + `commit`, for callers that write episodes one at a time.
        """
        try:
            return self.add_episode(run_id, outcome)
        finally:
            self.commit()

    def add_episode(self, run_id: str, outcome: EpisodeOutcome) -> bool:
        """Write the episode's outcome into the open group (opening one if none is), without committing; False
        (nothing written) when it already finished.

        Each episode is atomic within its group (a savepoint): one that fails to write leaves nothing of
        itself and the group's other episodes as they were. A finished episode is never replaced: not
        by an error, not by a second generation. An earlier errored attempt is replaced by the new
        outcome, after its outcome is copied to `failed_attempts`, so every attempt stays on record.
        When this process holds the run's lease, the lease is renewed when the group opens, in the
        group's transaction: the group then holds the write lock until it commits, so no other process
        can take the lease over in between, and a process that lost it writes nothing.
        """
        conn = self.conn
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
            token = self._leases.get(run_id)
            if token is not None:
                try:
                    self._renew(run_id, token)
                except BaseException:
                    conn.rollback()
                    raise
        conn.execute("SAVEPOINT episode")
        try:
            written = self._insert_episode(run_id, outcome)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK TO episode")
                conn.execute("RELEASE episode")
            raise
        conn.execute("RELEASE episode")
        return written

    def commit(self) -> None:
        """Commit the open group of episodes, if any: from here on they survive a killed process."""
        if self.conn.in_transaction:
            self.conn.commit()

    def _insert_episode(self, run_id: str, outcome: EpisodeOutcome) -> bool:
        k, u = outcome.key, outcome.usage
        existing = self.conn.execute("SELECT status FROM episodes WHERE run_id=? AND episode_id=?", (run_id, k.episode_id)).fetchone()
        if existing is not None and existing[0] == "done":
            return False
        if existing is not None:
            self._keep_failed_attempt(run_id, k.episode_id)
            self.conn.execute("DELETE FROM messages WHERE run_id=? AND episode_id=?", (run_id, k.episode_id))
            self.conn.execute("DELETE FROM wire_requests WHERE run_id=? AND episode_id=?", (run_id, k.episode_id))
            self.conn.execute("DELETE FROM episode_rewards WHERE run_id=? AND episode_id=?", (run_id, k.episode_id))
            self.conn.execute("DELETE FROM episodes WHERE run_id=? AND episode_id=?", (run_id, k.episode_id))
        self.conn.execute(
            "INSERT INTO episodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, k.episode_id, k.item_id, k.dataset, k.assistant_agent, k.assistant_model, k.user_agent,
             k.user_model, k.user_mode, k.temperature, k.sample_index, k.perturbation, outcome.status,
             outcome.termination, storable(redact(outcome.error_reason)) if outcome.error_reason else None, outcome.task_score,
             u.prompt_tokens, u.completion_tokens, u.latency_s, now()),
        )
        self.conn.executemany(
            "INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(run_id, k.episode_id, *_message_row(m)) for m in outcome.messages],
        )
        if outcome.reward is not None:
            r = outcome.reward
            self.conn.execute("INSERT INTO episode_rewards VALUES (?,?,?,?,?)",
                              (run_id, k.episode_id, r.reward, json.dumps(r.breakdown), json.dumps(r.details, default=str)))
        if outcome.wire:
            self.conn.executemany(
                "INSERT INTO wire_requests VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, k.episode_id, *_wire_row(w)) for w in outcome.wire],
            )
        return True

    def _keep_failed_attempt(self, run_id: str, episode_id: str) -> None:
        self.conn.execute(
            """INSERT INTO failed_attempts (run_id, episode_id, attempt, termination, error_reason, messages, finished_at)
               SELECT e.run_id, e.episode_id,
                      (SELECT COUNT(*) FROM failed_attempts f WHERE f.run_id = e.run_id AND f.episode_id = e.episode_id) + 1,
                      e.termination, e.error_reason,
                      (SELECT COUNT(*) FROM messages m WHERE m.run_id = e.run_id AND m.episode_id = e.episode_id),
                      e.finished_at
               FROM episodes e WHERE e.run_id=? AND e.episode_id=?""",
            (run_id, episode_id),
        )

    def write_shared_answer(self, run_id: str, answer: SharedAnswer) -> None:
        """Keep a shared generation so that resumed runs reuse it instead of regenerating."""
        m = answer.message
        self.commit()
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO shared_answers VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, answer.answer_id, answer.item_id, storable(m.content), answer.task_score, json.dumps(m.sampling),
                 m.usage.prompt_tokens, m.usage.completion_tokens, m.usage.latency_s, m.finish_reason),
            )


def _sampling_json(sampling: dict) -> str:
    """A message's sampling as stored: orjson writes the few numbers of every generated message in a
    seventh of the stdlib's time (the stdlib takes what orjson refuses, integers past 64 bits)."""
    try:
        return orjson.dumps(sampling).decode()
    except TypeError:
        return json.dumps(sampling)


def _wire_row(w: WireRecord) -> tuple:
    """A wire record as stored: the bodies as sent, only the keys the run used taken out (the request's headers,
    where the key travels, are not recorded; text a model wrote that merely looks like a key stays). `json.dumps`
    already writes a lone surrogate or a NUL as a JSON escape; `storable` keeps that true whatever writes the JSON."""
    return (w.seq, w.role, w.turn_index, w.path, storable(redact_secrets_only(json.dumps(w.request))), w.status,
            storable(redact_secrets_only(json.dumps(w.response))), w.prompt_tokens, w.completion_tokens, w.latency_s, w.sent_at)


def _message_row(m: Message) -> tuple:
    return (m.turn_index, m.role, storable(m.speaker), storable(m.content), _sampling_json(m.sampling) if m.sampling else None,
            m.usage.prompt_tokens, m.usage.completion_tokens, m.usage.latency_s, m.finish_reason, m.reused_from, *tool_columns(m))


__all__ = ["Store", "StoreError", "default_store_path", "message_from_row", "now"]
