"""A framework's loop stopped within seconds when its episode is cancelled (Ctrl-C, SIGTERM, a fatal error elsewhere).

Cancelling a task interrupts the one await it is in. A framework that awaits again on the way out
(AgentChat's `run_stream` waits in its `finally` for its runtime to go idle, which it does only once
the team has played on to its own end) swallows that one cancellation, so a run asked to stop kept
going for a minute or more. `stopping_promptly` runs the loop as a task of its own and, when the
episode is cancelled, tells the framework (its own cancellation token) and cancels the loop again
each `RECANCEL_S` until it ends, for at most `STOP_GRACE_S`; then the cancellation goes on up either way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

RECANCEL_S = 0.5
"""How long a cancelled loop may spend on its way out before it is cancelled again (its cleanup takes milliseconds)."""
STOP_GRACE_S = 3.0
"""How long a cancelled episode waits for its framework's loop to end before it stops waiting."""


async def stopping_promptly(run: Awaitable[T], on_cancel: Callable[[], None] | None = None,
                            grace_s: float = STOP_GRACE_S) -> T:
    """Await `run` (a framework's loop); when the caller is cancelled, call `on_cancel` (e.g. the framework's own
    cancellation token) and cancel the loop until it ends, within `grace_s`, then re-raise the cancellation."""
    task = asyncio.ensure_future(run)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while not task.done() and loop.time() < deadline:
            task.cancel()
            await asyncio.wait({task}, timeout=min(RECANCEL_S, max(deadline - loop.time(), 0.0)))
        if task.done() and not task.cancelled():
            task.exception()
        raise
