"""One writer per run: a lease in the store that a second process sees, and that a dead one does not hold.

The holder writes its pid, host and process start time, and renews a heartbeat with every group
of episodes it commits and every few seconds in between. Another process may take the lease over only when
the holder is gone: its heartbeat is older than `LEASE_TTL_S`, or it ran on this host and that
process no longer exists (a pid reused by another program does not count: the start time differs).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass

LEASE_TTL_S = 30.0
"""A heartbeat older than this means the holder is gone, whatever host it ran on."""
HEARTBEAT_S = 5.0
"""How often a running process renews its lease while no episode finishes."""


class RunBusy(RuntimeError):
    """Another live process holds the run's lease."""


class LeaseLost(RuntimeError):
    """This process no longer holds the lease it took (another took it over after a long stall)."""


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), which tells a reused pid from the original."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _pid_alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now_started = process_start_time(pid)
    return started is None or now_started is None or now_started == started


@dataclass(frozen=True)
class Holder:
    """Who holds a lease, as stored."""

    token: str
    pid: int
    host: str
    pid_started: str | None
    acquired_at: float
    heartbeat_at: float

    def alive(self, at: float | None = None) -> bool:
        """Whether the holder may still be writing: a fresh heartbeat and, on this host, a live process."""
        if (at or time.time()) - self.heartbeat_at > LEASE_TTL_S:
            return False
        return self.host != socket.gethostname() or _pid_alive(self.pid, self.pid_started)

    def describe(self) -> str:
        """`process 123 on host h (since 12:00:01, heartbeat 2 s ago)`."""
        since = time.strftime("%H:%M:%S", time.localtime(self.acquired_at))
        return f"process {self.pid} on host {self.host} (since {since}, heartbeat {time.time() - self.heartbeat_at:.0f} s ago)"


def holder(conn: sqlite3.Connection, run_id: str) -> Holder | None:
    """The stored lease of a run, live or not; None when no process ever held one (or it was released)."""
    try:
        row = conn.execute(
            "SELECT token, pid, host, pid_started, acquired_at, heartbeat_at FROM run_leases WHERE run_id=?", (run_id,)
        ).fetchone()
    except sqlite3.OperationalError:  # a read-only store of an older schema has no lease table
        return None
    return Holder(*row) if row else None


def acquire(conn: sqlite3.Connection, run_id: str, work: str | None = None) -> str:
    """Take the lease on `run_id` (a run's id, or another key such as a judge's on a run) for this process and
    return its token, or raise RunBusy naming the holder; `work` says what the lease is for in that message."""
    token = uuid.uuid4().hex
    pid = os.getpid()
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = holder(conn, run_id)
        if current is not None and current.alive():
            raise RunBusy(
                f"{work or f'run {run_id} is being written'} by {current.describe()}: wait for it to finish or stop it "
                f"(a lease whose holder died expires after {LEASE_TTL_S:g} s)"
            )
        at = time.time()
        conn.execute(
            "INSERT OR REPLACE INTO run_leases VALUES (?,?,?,?,?,?,?)",
            (run_id, token, pid, socket.gethostname(), process_start_time(pid), at, at),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return token


def renew(conn: sqlite3.Connection, run_id: str, token: str) -> None:
    """Refresh the heartbeat inside the caller's transaction; LeaseLost if another process holds the run now."""
    cur = conn.execute("UPDATE run_leases SET heartbeat_at=? WHERE run_id=? AND token=?", (time.time(), run_id, token))
    if cur.rowcount != 1:
        current = holder(conn, run_id)
        who = current.describe() if current else "nobody"
        raise LeaseLost(f"this process lost the lease on run {run_id} (now held by {who}); its episodes in flight are not written")


def release(conn: sqlite3.Connection, run_id: str, token: str) -> None:
    """Give the lease up (only if this process still holds it)."""
    with conn:
        conn.execute("DELETE FROM run_leases WHERE run_id=? AND token=?", (run_id, token))
