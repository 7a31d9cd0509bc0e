"""What every command shares: consoles that print untrusted text as text, one way to fail, the store, signals.

Error reasons, model names, paths and generated text come from outside the testbed: they are
printed with markup and emoji codes off (a reason holding `[/]` or a model named `:m:` prints as
written), with API keys redacted, and neutralised: both consoles are `NeutralConsole`s, so an escape
sequence, a control character or a bidi override in anything they print shows as a visible mark
(`␛]0;…␇`, `<U+202E>`) instead of driving the terminal (`testbed.terminal_text`). Output written
without a console (Markdown, CSV) goes through `neutralised` where it is made.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from testbed.redaction import redact
from testbed.store.sqlite_store import StoreError
from testbed.terminal_text import NeutralConsole, neutralised

T = TypeVar("T")

console = NeutralConsole(markup=False, emoji=False, highlight=False)
err_console = NeutralConsole(stderr=True, markup=False, emoji=False, highlight=False)


class Terminated(Exception):
    """The process was asked to stop (SIGTERM); the work in flight was cancelled and cleaned up."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear error (keys redacted, markup not interpreted, control characters shown as marks) and exit non-zero."""
    err_console.print(Text.assemble(("error:", "bold red"), " ", neutralised(redact(message))), soft_wrap=True)
    raise typer.Exit(code)


def say(*parts: str | tuple[str, str], to: Console | None = None) -> None:
    """Print a line of plain and (text, style) parts (on `to`, stdout by default); nothing in it is read as markup,
    and no control character in it reaches the terminal."""
    shown = ((neutralised(p[0]), p[1]) if isinstance(p, tuple) else neutralised(redact(p)) for p in parts)
    (to or console).print(Text.assemble(*shown), soft_wrap=True)


def open_store(path: Path | None, *, create: bool = False, readonly: bool = False):
    """Open the store: `create` for `run` only; every other command needs an existing store,
    and reading commands open it read-only, so a mistyped path never leaves an empty store behind."""
    from testbed.store import Store
    from testbed.store.sqlite_store import default_store_path

    target = Path(path) if path is not None else default_store_path()
    try:
        if not create and not target.is_file():
            raise StoreError(f"no store at {target}: run `testbed run` first, or pass --store (or $TESTBED_STORE) with the right path")
        db = Store(target, readonly=readonly)
    except (StoreError, OSError) as exc:
        fail(str(exc))
    except Exception as exc:  # sqlite3.DatabaseError and friends
        fail(f"cannot open store {target}: {exc}")
    if db.notice:
        say(("warning:", "bold yellow"), " ", db.notice, to=err_console)
    return db


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, with SIGTERM cancelling the work like Ctrl-C does, so cleanup runs and the
    run is recorded as interrupted; raises Terminated after a SIGTERM."""

    terminated = False

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        def on_term() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        try:
            loop.add_signal_handler(signal.SIGTERM, on_term)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
        try:
            return await coro
        finally:
            try:
                loop.remove_signal_handler(signal.SIGTERM)
            except (NotImplementedError, RuntimeError, ValueError):
                pass

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if terminated:
            raise Terminated() from None
        raise KeyboardInterrupt from None


def labelled_run(db, run_id: str, judge: str | None):
    """The full run id and the labeller a selector names on it (None: the one every face shows unasked); one clear
    error (with the command that labels the run) otherwise."""
    from testbed.label_limits import LabelTooLong, checked_judge
    from testbed.store.labels import DEFAULT_JUDGE, labeller_of

    try:
        checked_judge(judge or DEFAULT_JUDGE, "--judge")
        run = db.run(run_id).run_id
    except (LabelTooLong, StoreError) as exc:
        fail(str(exc))
    require_user_turns(db, run)
    try:
        return run, labeller_of(db, run, judge)
    except StoreError as exc:
        name = (judge or DEFAULT_JUDGE).partition(":")[0].partition("@")[0]
        fail(f"{exc}\nLabel the run first: testbed judge {run} --judge {name}")


def require_user_turns(db, run: str) -> None:
    """Fail (exit 1), saying why, when the run has no simulated-user turn to label, plot, draw or export: no judge
    can change that, so the message does not send the user to `testbed judge`."""
    if next(iter(db.turn_keys(run)), None) is not None:
        return
    counts = db.episode_counts(run)
    total = sum(counts.values())
    if not total:
        why = f"no episode has finished yet (planned {db.run(run).planned_episodes}); run the same `testbed run` again to resume it"
    elif counts.get("error"):
        reasons = db.error_reasons(run, limit=1)
        why = f"{counts['error']} of its {total} episodes errored before a simulated user spoke"
        why += f" (most often: {reasons[0][0]})" if reasons else ""
        why += "; fix the cause and run it again: the errored episodes are redone"
    else:
        why = f"none of its {total} episodes has a simulated-user turn (every one ended before the user's turn)"
    fail(f"run {run} has no simulated-user turns: {why}", 1)
