"""What a framework run logs, and where: frameworks' own loggers and the tracebacks of failed episodes go to a
file under the store's folder (keys redacted), never to the terminal; an episode's reason is one line.

AutoGen logs every failed message handler with its traceback ("Error processing publish message"),
the OpenAI SDK and httpx log retries, LangChain and CAMEL warn through `logging` and `warnings`. With
no handler configured, Python prints all of it on stderr, tracebacks and any key a server echoed
included. While a framework run lasts, every record reaches one file handler instead (on the root
logger, with the frameworks' loggers propagating to it), and Python warnings are logged there too.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from testbed.backends.base import BackendError
from testbed.redaction import redact

FRAMEWORK_LOGGERS = ("autogen_core", "autogen_agentchat", "autogen_ext", "openai", "httpx", "httpcore", "langchain",
                     "langchain_core", "langchain_openai", "langgraph", "camel", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "asyncio")
"""Loggers whose own handlers (if a framework added any) are set aside so that their records reach the file only."""
FAILURES = logging.getLogger("testbed.frameworks")
"""Where a failed episode's full traceback is logged."""
REASON_CHARS = 400
_TRACEBACK = re.compile(r"\s*Traceback(?: \(most recent call last\))?:?.*", re.S)


class RedactingFormatter(logging.Formatter):
    """A formatter whose output, traceback included, has every key removed (testbed.redaction)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as text, redacted."""
        return redact(super().format(record))


def log_path(store_path: Path, run_id: str) -> Path:
    """The log file of one run: `logs/<run id>.log` beside the store."""
    return Path(store_path).parent / "logs" / f"{run_id}.log"


@contextlib.contextmanager
def framework_log(path: Path) -> Iterator[Path]:
    """Send every log record and warning to `path` (created on the first one) while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, delay=True, encoding="utf-8", errors="backslashreplace")
    handler.setLevel(logging.WARNING)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    saved = [(logger, logger.handlers[:], logger.propagate) for logger in map(logging.getLogger, FRAMEWORK_LOGGERS)]
    for logger, _, _ in saved:
        logger.handlers, logger.propagate = [], True
    root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        yield path
    finally:
        logging.captureWarnings(False)
        root.removeHandler(handler)
        handler.close()
        for logger, handlers, propagate in saved:
            logger.handlers, logger.propagate = handlers, propagate


def written(path: Path) -> Path | None:
    """The log file when anything was written to it."""
    return path if path.is_file() and path.stat().st_size else None


def one_line(exc: BaseException) -> str:
    """`Type: message` of an exception on one line, without a traceback that a framework put into its message."""
    text = str(exc)
    if "Traceback" in text:
        text = _TRACEBACK.sub("", text)
    text = " ".join(text.split())
    return redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:REASON_CHARS]


def framework_failure(framework: str, exc: BaseException) -> BackendError:
    """A framework's exception as the episode's error: one line (its type and message), the traceback logged. A
    RecursionError says what it most likely means: the framework parsed something nested too deeply (a tool call's
    arguments nested a thousand deep, which the testbed's own readers refuse before parsing: testbed.tool_arguments)."""
    FAILURES.error("%s: an episode failed", framework, exc_info=exc)
    reason = one_line(exc)
    if isinstance(exc, RecursionError):
        reason = (f"{reason[:160]} (something the model sent, such as a tool call's arguments, nests too deeply for "
                  f"{framework} to parse)")
    return BackendError(f"{framework}: {reason}")
