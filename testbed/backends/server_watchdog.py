"""End a managed model server's whole session, and keep a watchdog that does it if the testbed cannot.

A managed vLLM server is a tree: the API server (started in a session of its own, so a Ctrl-C to the
testbed's process group does not reach it) and the engine-core and worker processes it spawns. Signalling
the API server alone, or waiting only for it, can leave an engine core behind, busy and holding the
model's memory. `end_session` therefore ends every process of the server's session: SIGTERM to each,
then SIGKILL to any still there once the API server has gone (after a short grace) or the grace ran out.

The testbed calls it itself on every end it sees (`VLLMServer.stop`). For the ends it cannot see —
`kill -9`, a signal whose default action ends it before Python runs, a second interrupt cutting its
clean-up short — each server has a `Watchdog`: a small process in a session of its own, deaf to SIGINT,
SIGTERM and SIGHUP, holding the read end of a pipe whose write end only the testbed holds. When the
testbed ends, however it ends, the kernel closes the write end; the watchdog reads end-of-file (or sees
its parent gone) and ends the server's session. A testbed that stopped its server writes `release` first,
and the watchdog exits touching nothing. This file is also the watchdog's program: it runs as a script
on the standard library alone, so it starts in milliseconds.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

RELEASE = b"release\n"
STRAGGLER_GRACE_S = 2.0
"""How long processes left in a session after its leader (the API server) has gone get before SIGKILL: the API
server stops its engine as it shuts down, so what is left after that is an orphan."""
WATCHDOG_GRACE_S = 5.0
"""How long the watchdog lets a server shut down on SIGTERM after the testbed is gone."""


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, session id) of a process from /proc, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[0], int(fields[3])


def session_members(sid: int) -> list[int]:
    """Pids of the live (not zombie) processes in session `sid`: a server's API server and everything it spawned,
    including children that moved to a process group of their own."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(entry)
            if stat is not None and stat[1] == sid and stat[0] not in ("Z", "X"):
                members.append(int(entry))
    return members


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def end_session(sid: int, grace_s: float, *, reap: subprocess.Popen | None = None) -> None:
    """Stop every process of session `sid` (whose leader has pid `sid`): SIGTERM to each; SIGKILL to those left
    `STRAGGLER_GRACE_S` after the leader has gone, or `grace_s` after the SIGTERM, whichever comes first.

    `reap` is the leader's Popen when the caller is its parent, so the leader is waited for and does not linger
    as a zombie. Returns once no live process is left in the session (or 5 s after the SIGKILL, whatever is left).
    """
    _signal_all(session_members(sid), signal.SIGTERM)
    start = time.monotonic()
    leader_gone_at: float | None = None
    while members := session_members(sid):
        if reap is not None:
            reap.poll()
        now = time.monotonic()
        if leader_gone_at is None and sid not in members:
            leader_gone_at = now
        if now - start >= grace_s or (leader_gone_at is not None and now - leader_gone_at >= STRAGGLER_GRACE_S):
            break
        time.sleep(0.1)
    if members:
        _signal_all(members, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while session_members(sid) and time.monotonic() < deadline:
            time.sleep(0.05)
    if reap is not None:
        try:
            reap.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class Watchdog:
    """The watchdog process of one server: ends the server's session when the testbed ends without `release`."""

    def __init__(self, sid: int, grace_s: float = WATCHDOG_GRACE_S) -> None:
        read_end, self._write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, str(sid), str(grace_s), str(os.getpid())],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)

    def release(self) -> None:
        """Tell the watchdog its server was stopped, so it exits without acting; idempotent."""
        if self._write_end < 0:
            return
        try:
            os.write(self._write_end, RELEASE)
        except OSError:
            pass
        os.close(self._write_end)
        self._write_end = -1
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def watch(sid: int, grace_s: float, parent: int) -> None:
    """The watchdog's loop: wait until the testbed releases the server (exit) or ends (end the server's session)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    received = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.5)
        if readable:
            chunk = os.read(0, 64)
            received += chunk
            if RELEASE in received:
                return
            if chunk:
                continue
            break
        if os.getppid() != parent:
            break
    end_session(sid, grace_s)


if __name__ == "__main__":
    watch(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))
