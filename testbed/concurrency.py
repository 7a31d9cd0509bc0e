"""Run many coroutines as one: the first failure cancels the rest, so nothing runs on after a fatal error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def gather_or_cancel(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """Results in order, like `asyncio.gather`; on the first exception every other task is cancelled
    and awaited before the exception is re-raised (gather would leave them running)."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        pending = set(tasks)
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for task in finished:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()
        return [t.result() for t in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
