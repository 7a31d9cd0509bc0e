"""Typed reads of a store: the queries that turn stored runs, episodes, messages and outcomes into records.

`Store` inherits these methods, so a notebook or a report asks `store.turns(run_id)` and never
writes SQL. The readers take an exact run id and return nothing for an unknown one (a resumed or
empty run is not an error); `run()` resolves a unique prefix, and the frame readers in
`testbed.store.frames` use it, so a researcher can type the short id the CLI prints.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import fields
from itertools import groupby
from pathlib import Path
from typing import Any

from testbed.specs.registries import default_framework
from testbed.store import lease
from testbed.store.generated_turns import generated_turn_keys_sql
from testbed.store.records import EpisodeKey, EpisodeRecord, EpisodeReward, FailedAttempt, RunRecord, SharedAnswer, TurnRecord, WireRecord
from testbed.store.tool_messages import tool_fields
from testbed.conversation_context import capped, earlier_entries
from testbed.transcript import SPOKEN_ROLES, TOOL_CALLS_COLUMN, Message, Usage, generated_user_turns, is_assistant, request_message

EPISODE_STATUSES = ("done", "error")
"""Every status an episode can be stored with (the schema's CHECK): `episode_counts` always has both."""

EPISODE_ORDER = "status, rowid"
"""Finished episodes first, then errored ones, each in the order written: the order reports have
always read episodes in (the `episodes_by_run` index), so their tables keep their row order."""


TURN_BATCH = 2000
"""Episodes `iter_turns` reads per query: large enough that query overhead vanishes, small enough to stay light."""

_TURN_KEYS = generated_turn_keys_sql(finished_only=True)
"""The generated user turns of finished episodes (`generated_user_turns`: user messages after the first answer)."""


class StoreError(RuntimeError):
    """The store file cannot be used (wrong schema, unknown run)."""


def message_from_row(row: sqlite3.Row | dict) -> Message:
    """Rebuild a Message from a stored `messages` row."""
    return Message(
        role=row["role"], content=row["content"], speaker=row["speaker"], turn_index=row["turn_index"],
        sampling=json.loads(row["sampling_json"]) if row["sampling_json"] else None,
        usage=Usage(row["prompt_tokens"], row["completion_tokens"], row["latency_s"]),
        finish_reason=row["finish_reason"], reused_from=row["reused_from"], **tool_fields(row),
    )


def episode_from_row(row: sqlite3.Row) -> EpisodeRecord:
    """Rebuild an EpisodeRecord from a stored `episodes` row."""
    key = EpisodeKey(*(row[f.name] for f in fields(EpisodeKey)))
    return EpisodeRecord(row["run_id"], key, row["status"], row["termination"], row["error_reason"], row["task_score"],
                         Usage(row["prompt_tokens"], row["completion_tokens"], row["latency_s"]), row["finished_at"])


def wire_from_row(row: sqlite3.Row) -> WireRecord:
    """Rebuild a WireRecord from a stored `wire_requests` row."""
    return WireRecord(row["seq"], row["role"], row["path"], json.loads(row["request_json"]), row["status"],
                      json.loads(row["response_json"]), row["prompt_tokens"], row["completion_tokens"], row["latency_s"],
                      row["sent_at"], row["turn_index"])


def _calls(row: Any) -> bool:
    try:
        return bool(row[TOOL_CALLS_COLUMN])
    except (KeyError, IndexError):
        return False


def episode_turns(episode_id: str, messages: Sequence[Any]) -> list[TurnRecord]:
    """The generated user turns of one episode's messages (in turn order), each with its context.

    Which turns count is `testbed.transcript.generated_user_turns`; the context is the episode's
    request (`testbed.transcript.request_message`), the latest assistant message before the turn (messages that call
    tools are neither; tool results are no message of either side), and the conversation between the two
    (`testbed.conversation_context`: tool traffic marked, never shown; capped).
    """
    generated = {m["turn_index"] for m in generated_user_turns(messages)}
    request = request_message(messages)
    question = "" if request is None else request["content"]
    out, answer, answer_at, after_request = [], "", None, 0
    for k, m in enumerate(messages):
        if m is request:
            after_request = k + 1
        if m["role"] not in SPOKEN_ROLES or _calls(m):
            continue
        if is_assistant(m):
            answer, answer_at = m["content"], k
        elif m["turn_index"] in generated:
            before = capped(earlier_entries(messages[after_request:answer_at])) if answer_at is not None and answer_at > after_request else ()
            out.append(TurnRecord(episode_id, m["turn_index"], question, answer, m["content"], before))
    return out


class StoreReader:
    """The read half of `Store`: records of runs, episodes, messages, turns and outcomes."""

    conn: sqlite3.Connection
    path: Path
    schema_version: int

    def has_table(self, name: str) -> bool:
        """Whether the store has a table: a store of an older schema opened read-only lacks the newer ones."""
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None

    def effective_status(self, run_id: str, status: str) -> str:
        """A run stored as `running` whose writer is gone (kill -9, SIGTERM, a crash) is `interrupted`.

        Only a run whose lease is still stored can be judged so: a run written without one (by the
        Python API, or by an older testbed) keeps the status it was stored with.
        """
        if status != "running":
            return status
        current = lease.holder(self.conn, run_id)
        return "interrupted" if current is not None and not current.alive() else "running"

    def run_exists(self, run_id: str) -> bool:
        """Whether the run has a row (it does from `begin_run` on)."""
        return self.conn.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone() is not None

    def runs(self) -> list[dict[str, Any]]:
        """Every run with its episode counts (`done`, `errors`), newest first: the `testbed runs` listing."""
        rows = self.conn.execute(
            """SELECT r.run_id, r.scenario, r.kind, r.status, r.started_at, r.finished_at, r.planned_episodes,
                      COALESCE(SUM(e.status='done'), 0) AS done, COALESCE(SUM(e.status='error'), 0) AS errors
               FROM runs r LEFT JOIN episodes e ON e.run_id = r.run_id
               GROUP BY r.run_id ORDER BY r.started_at DESC"""
        )
        return [{**dict(r), "status": self.effective_status(r["run_id"], r["status"])} for r in rows]

    def _run_record(self, row: sqlite3.Row) -> RunRecord:
        return RunRecord(self.schema_version, row["run_id"], row["scenario"], row["kind"], json.loads(row["spec_json"]),
                         row["fingerprint"], json.loads(row["versions_json"]), row["git_revision"], row["started_at"],
                         row["finished_at"], self.effective_status(row["run_id"], row["status"]), row["planned_episodes"],
                         self.framework_of(row["run_id"]))

    def framework_of(self, run_id: str) -> str:
        """The framework that ran the run's turn loops (the baseline, `default_framework()`, for runs stored before
        frameworks were recorded: they ran the testbed's own loop)."""
        if not self.has_table("run_frameworks"):
            return default_framework()
        row = self.conn.execute("SELECT framework FROM run_frameworks WHERE run_id=?", (run_id,)).fetchone()
        return row[0] if row is not None else default_framework()

    def run_cost(self, run_id: str) -> tuple[float, float] | None:
        """The run's wall time and the client process's CPU time in seconds, summed over its invocations; None if unknown."""
        if not self.has_table("run_frameworks"):
            return None
        row = self.conn.execute("SELECT wall_s, client_cpu_s FROM run_frameworks WHERE run_id=?", (run_id,)).fetchone()
        return (row[0], row[1]) if row is not None else None

    def wire(self, run_id: str, episode_id: str | None = None, turn: int | None = None) -> list[WireRecord]:
        """The recorded requests of a run, of one episode, or of one turn of it, in the order sent."""
        if not self.has_table("wire_requests"):
            return []
        sql, args = "SELECT * FROM wire_requests WHERE run_id=?", [run_id]
        if episode_id is not None:
            sql, args = sql + " AND episode_id=?", [*args, episode_id]
        if turn is not None:
            sql, args = sql + " AND turn_index=?", [*args, turn]
        rows = self.conn.execute(sql + " ORDER BY episode_id, seq", args)
        return [wire_from_row(r) for r in rows]

    def wire_episodes(self, run_id: str) -> dict[str, list[WireRecord]]:
        """Every episode's recorded requests, by episode id."""
        out: dict[str, list[WireRecord]] = {}
        for eid, rows in groupby(self._wire_rows(run_id), key=lambda pair: pair[0]):
            out[eid] = [w for _, w in rows]
        return out

    def wire_episode_ids(self, run_id: str) -> list[str]:
        """The ids of the run's episodes that have a wire log, sorted, without reading a body: bodies may hold megabytes."""
        if not self.has_table("wire_requests"):
            return []
        rows = self.conn.execute("SELECT DISTINCT episode_id FROM wire_requests WHERE run_id=? ORDER BY episode_id", (run_id,))
        return [r[0] for r in rows]

    def _wire_rows(self, run_id: str):
        if not self.has_table("wire_requests"):
            return
        for r in self.conn.execute("SELECT * FROM wire_requests WHERE run_id=? ORDER BY episode_id, seq", (run_id,)):
            yield r["episode_id"], wire_from_row(r)

    def find_run(self, run_id: str) -> RunRecord | None:
        """The run with exactly this id, or None: for callers that hold a full id and treat a missing run as empty."""
        row = self.conn.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return self._run_record(row) if row is not None else None

    def run(self, run_id: str) -> RunRecord:
        """One run; a unique prefix of the id is enough. StoreError names the known runs when none or several match."""
        rows = self.conn.execute("SELECT * FROM runs WHERE substr(run_id, 1, ?) = ?", (len(run_id), run_id)).fetchall()
        exact = [r for r in rows if r["run_id"] == run_id]
        rows = exact or rows
        if len(rows) != 1:
            known = ", ".join(r["run_id"] for r in self.conn.execute("SELECT run_id FROM runs")) or "none"
            problem = "is ambiguous" if rows else "is not in the store"
            raise StoreError(f"run {run_id!r} {problem} ({self.path}); runs: {known}")
        return self._run_record(rows[0])

    def done_episode_ids(self, run_id: str) -> set[str]:
        """Episodes that finished successfully; a resumed run skips exactly these."""
        rows = self.conn.execute("SELECT episode_id FROM episodes WHERE run_id=? AND status='done'", (run_id,))
        return {r[0] for r in rows}

    def episodes(self, run_id: str) -> list[EpisodeRecord]:
        """Every episode of the run, errored ones too, finished ones first, each in the order written."""
        rows = self.conn.execute(f"SELECT * FROM episodes WHERE run_id=? ORDER BY {EPISODE_ORDER}", (run_id,))
        return [episode_from_row(r) for r in rows]

    def episode_counts(self, run_id: str) -> dict[str, int]:
        """Episodes per status (`done` and `error` always present): how a run decides it is complete."""
        counts = dict.fromkeys(EPISODE_STATUSES, 0)
        counts.update(self.conn.execute("SELECT status, COUNT(*) FROM episodes WHERE run_id=? GROUP BY status", (run_id,)).fetchall())
        return counts

    def error_reasons(self, run_id: str, limit: int = 5) -> list[tuple[str, int]]:
        """The most frequent error reasons of a run with their counts, so a report never hides why episodes failed."""
        rows = self.conn.execute(
            "SELECT error_reason, COUNT(*) FROM episodes WHERE run_id=? AND status='error' GROUP BY error_reason ORDER BY 2 DESC LIMIT ?",
            (run_id, limit),
        )
        return [(r[0], r[1]) for r in rows]

    def rewards(self, run_id: str) -> dict[str, EpisodeReward]:
        """The evaluator's reward of every episode that has one (τ² tasks), by episode id."""
        rows = self.conn.execute("SELECT * FROM episode_rewards WHERE run_id=?", (run_id,)) if self.has_table("episode_rewards") else []
        return {r["episode_id"]: EpisodeReward(r["reward"], json.loads(r["breakdown_json"]), json.loads(r["details_json"])) for r in rows}

    def messages(self, run_id: str, episode_id: str) -> list[Message]:
        """One episode's messages in turn order, as they were written."""
        rows = self.conn.execute("SELECT * FROM messages WHERE run_id=? AND episode_id=? ORDER BY turn_index", (run_id, episode_id))
        return [message_from_row(r) for r in rows]

    def turns(self, run_id: str, *, include_errored: bool = False) -> list[TurnRecord]:
        """Every generated user turn of the run's finished episodes, ordered by episode id and turn index.

        These are the turns judges label and reports count. `include_errored` adds the turns an
        errored episode wrote before it failed, for looking at them; they are never judged.
        A whole run at once: code that walks a large run reads `iter_turns` instead.
        """
        return list(self.iter_turns(run_id, include_errored=include_errored))

    def iter_turns(self, run_id: str, *, include_errored: bool = False, batch: int = TURN_BATCH) -> Iterator[TurnRecord]:
        """`turns`, read `batch` episodes at a time, so a run of any size is walked in bounded memory.

        Each batch is its own query, so a caller may write (labels) between batches.
        """
        columns = f"m.episode_id, m.turn_index, m.role, m.speaker, m.content, m.{TOOL_CALLS_COLUMN}"
        for rows in self._message_batches(run_id, include_errored, batch, columns, "AND m.role != 'system'"):
            for eid, msgs in groupby(rows, key=lambda r: r["episode_id"]):
                yield from episode_turns(eid, list(msgs))

    def iter_messages(self, run_id: str, *, include_errored: bool = False, batch: int = TURN_BATCH) -> Iterator[tuple[str, list[Message]]]:
        """(episode_id, messages in turn order) of every finished episode (errored ones too, if asked) that
        has messages, in episode id order, read `batch` episodes at a time: `messages` for a whole run."""
        for rows in self._message_batches(run_id, include_errored, batch, "m.*"):
            for eid, msgs in groupby(rows, key=lambda r: r["episode_id"]):
                yield eid, [message_from_row(r) for r in msgs]

    def _message_batches(self, run_id: str, include_errored: bool, batch: int, columns: str, where: str = "") -> Iterator[list]:
        """The messages of the run's finished (or all) episodes, `batch` episodes per query, in episode and turn order."""
        status = "" if include_errored else "AND status='done'"
        after: str | None = None
        while ids := self._episode_ids_after(run_id, status, after, batch):
            yield self.conn.execute(
                f"""SELECT {columns} FROM messages m JOIN episodes e ON e.run_id = m.run_id AND e.episode_id = m.episode_id
                    WHERE m.run_id=? AND m.episode_id BETWEEN ? AND ? {status.replace("status", "e.status")} {where}
                    ORDER BY m.episode_id, m.turn_index""", (run_id, ids[0], ids[-1])).fetchall()
            after = ids[-1]

    def _episode_ids_after(self, run_id: str, status: str, after: str | None, limit: int) -> list[str]:
        """The next `limit` episode ids of the run in id order (of finished episodes, with `status`), after `after`."""
        since, args = ("AND episode_id > ?", (after,)) if after is not None else ("", ())
        rows = self.conn.execute(
            f"SELECT episode_id FROM episodes WHERE run_id=? {status} {since} "
            "ORDER BY episode_id LIMIT ?", (run_id, *args, limit))
        return [r[0] for r in rows]

    def turn_keys(self, run_id: str) -> Iterator[tuple[str, int]]:
        """(episode_id, turn_index) of every turn `turns` gives, in its order, without reading any text.

        For counting and matching turns (what a judge has left to do) where the text is not needed.
        """
        return iter(self.conn.execute(_TURN_KEYS, (run_id, run_id)))

    def shared_answers(self, run_id: str) -> dict[str, SharedAnswer]:
        """Shared generations of a run by answer id, so a resumed run reuses them instead of regenerating."""
        rows = self.conn.execute("SELECT * FROM shared_answers WHERE run_id=?", (run_id,))
        return {r["answer_id"]: SharedAnswer(r["answer_id"], r["item_id"], _shared_message(r), r["task_score"]) for r in rows}

    def failed_attempts(self, run_id: str) -> list[FailedAttempt]:
        """Errored attempts that a later attempt replaced, by episode and attempt number (none in older stores)."""
        if not self.has_table("failed_attempts"):
            return []
        rows = self.conn.execute(
            """SELECT run_id, episode_id, attempt, termination, error_reason, messages, finished_at FROM failed_attempts
               WHERE run_id=? ORDER BY episode_id, attempt""", (run_id,))
        return [FailedAttempt(*r) for r in rows]


def _shared_message(row: sqlite3.Row) -> Message:
    return Message(role="assistant", content=row["content"], speaker="", turn_index=0,
                   sampling=json.loads(row["sampling_json"]) if row["sampling_json"] else None,
                   usage=Usage(row["prompt_tokens"], row["completion_tokens"], row["latency_s"]),
                   finish_reason=row["finish_reason"])
