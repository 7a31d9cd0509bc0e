"""SQLite in WAL mode: every finished episode is one transaction, so a killed run loses nothing finished."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from testbed.store.records import EpisodeOutcome, SharedAnswer
from testbed.store.schema import DDL, SCHEMA_VERSION, UPGRADABLE_FROM
from testbed.transcript import Message, Usage


def default_store_path() -> Path:
    """`$TESTBED_STORE`, else `.testbed/store.sqlite` under the current folder (like ./mlruns)."""
    return Path(os.environ.get("TESTBED_STORE", Path(".testbed") / "store.sqlite"))


def now() -> str:
    """UTC timestamp in ISO format, the store's one time format."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class StoreError(RuntimeError):
    """The store file cannot be used (wrong schema, unknown run)."""


class Store:
    """Reads and writes runs; one connection, used from one thread (the event loop's)."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=30)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        has_meta = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() if has_meta else None
        if row is not None and int(row[0]) != SCHEMA_VERSION and int(row[0]) not in UPGRADABLE_FROM:
            self.conn.close()
            raise StoreError(f"{self.path} has schema version {row[0]}, this testbed reads {SCHEMA_VERSION}: use another --store")
        with self.conn:
            self.conn.executescript(DDL)
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite)."""
        self.conn.close()

    def begin_run(self, run_id: str, *, scenario: str, kind: str, spec: dict, fingerprint: str,
                  versions: dict, git_revision: str | None, planned: int) -> bool:
        """Create the run, or mark an existing one running again; True when it already existed."""
        existing = self.conn.execute("SELECT fingerprint FROM runs WHERE run_id=?", (run_id,)).fetchone()
        with self.conn:
            if existing is None:
                self.conn.execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,NULL,'running',?)",
                    (run_id, scenario, kind, json.dumps(spec), fingerprint, json.dumps(versions), git_revision, now(), planned),
                )
                return False
            if existing["fingerprint"] != fingerprint:
                raise StoreError(f"run {run_id} exists with a different spec: pass another --run-id to start a new run")
            self.conn.execute("UPDATE runs SET status='running', finished_at=NULL, planned_episodes=? WHERE run_id=?", (planned, run_id))
            return True

    def finish_run(self, run_id: str, status: str) -> None:
        """Record how the run ended (`done`, `incomplete`, `interrupted`, `failed`)."""
        with self.conn:
            self.conn.execute("UPDATE runs SET status=?, finished_at=? WHERE run_id=?", (status, now(), run_id))

    def done_episode_ids(self, run_id: str) -> set[str]:
        """Episodes that finished successfully; a resumed run skips exactly these."""
        rows = self.conn.execute("SELECT episode_id FROM episodes WHERE run_id=? AND status='done'", (run_id,))
        return {r[0] for r in rows}

    def write_episode(self, run_id: str, outcome: EpisodeOutcome) -> None:
        """Replace any earlier attempt of the episode with this outcome, atomically."""
        k, u = outcome.key, outcome.usage
        with self.conn:
            self.conn.execute("DELETE FROM messages WHERE run_id=? AND episode_id=?", (run_id, k.episode_id))
            self.conn.execute("DELETE FROM episodes WHERE run_id=? AND episode_id=?", (run_id, k.episode_id))
            self.conn.execute(
                "INSERT INTO episodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, k.episode_id, k.item_id, k.dataset, k.assistant_agent, k.assistant_model, k.user_agent,
                 k.user_model, k.user_mode, k.temperature, k.sample_index, k.perturbation, outcome.status,
                 outcome.termination, outcome.error_reason, outcome.task_score, u.prompt_tokens,
                 u.completion_tokens, u.latency_s, now()),
            )
            self.conn.executemany(
                "INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, k.episode_id, *_message_row(m)) for m in outcome.messages],
            )

    def write_shared_answer(self, run_id: str, answer: SharedAnswer) -> None:
        """Keep a shared generation so that resumed runs reuse it instead of regenerating."""
        m = answer.message
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO shared_answers VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, answer.answer_id, answer.item_id, m.content, answer.task_score, json.dumps(m.sampling),
                 m.usage.prompt_tokens, m.usage.completion_tokens, m.usage.latency_s, m.finish_reason),
            )

    def shared_answers(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Shared generations of a run by answer id."""
        rows = self.conn.execute("SELECT * FROM shared_answers WHERE run_id=?", (run_id,))
        return {r["answer_id"]: dict(r) for r in rows}

    def runs(self) -> list[dict[str, Any]]:
        """Every run with its episode counts, newest first."""
        rows = self.conn.execute(
            """SELECT r.run_id, r.scenario, r.kind, r.status, r.started_at, r.finished_at, r.planned_episodes,
                      COALESCE(SUM(e.status='done'), 0) AS done, COALESCE(SUM(e.status='error'), 0) AS errors
               FROM runs r LEFT JOIN episodes e ON e.run_id = r.run_id
               GROUP BY r.run_id ORDER BY r.started_at DESC"""
        )
        return [dict(r) for r in rows]

    def run(self, run_id: str) -> dict[str, Any]:
        """One run's row, with spec and versions decoded; a unique prefix of the id is enough."""
        rows = self.conn.execute("SELECT * FROM runs WHERE substr(run_id, 1, ?) = ?", (len(run_id), run_id)).fetchall()
        exact = [r for r in rows if r["run_id"] == run_id]
        rows = exact or rows
        if len(rows) != 1:
            known = ", ".join(r["run_id"] for r in self.conn.execute("SELECT run_id FROM runs")) or "none"
            problem = "is ambiguous" if rows else "is not in the store"
            raise StoreError(f"run {run_id!r} {problem} ({self.path}); runs: {known}")
        out = dict(rows[0])
        out["spec"] = json.loads(out.pop("spec_json"))
        out["versions"] = json.loads(out.pop("versions_json"))
        return out


def _message_row(m: Message) -> tuple:
    return (m.turn_index, m.role, m.speaker, m.content, json.dumps(m.sampling) if m.sampling else None,
            m.usage.prompt_tokens, m.usage.completion_tokens, m.usage.latency_s, m.finish_reason, m.reused_from)


def message_from_row(row: sqlite3.Row | dict) -> Message:
    """Rebuild a Message from a stored row."""
    return Message(
        role=row["role"], content=row["content"], speaker=row["speaker"], turn_index=row["turn_index"],
        sampling=json.loads(row["sampling_json"]) if row["sampling_json"] else None,
        usage=Usage(row["prompt_tokens"], row["completion_tokens"], row["latency_s"]),
        finish_reason=row["finish_reason"], reused_from=row["reused_from"],
    )


__all__ = ["Store", "StoreError", "default_store_path", "message_from_row", "now"]
