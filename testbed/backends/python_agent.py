"""`backend: python`: an agent written in Python (testbed.backends.agent_protocol) in the assistant's seat.

The agent is imported before any server starts (`import_problem`, the entry's check), so a callable
that cannot be imported is a spec error naming the module and the fix. At run time the backend is a
Backend like any model's: each request is one turn; its `conversation` picks the episode's own agent
instance (built on the episode's first turn, dropped with its transcript). Whatever goes wrong inside
the agent (anything it raises, BaseExceptions such as SystemExit or CancelledError included, a reply
over its spec's `max_reply_bytes`) becomes a BackendError whose one-line reason names the agent, so the
episode is an error and the run goes on; only the testbed's own interrupt stops the run.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
import weakref
from typing import Any

from testbed.backends.agent_protocol import AgentTurn, MalformedAgentReply, completion_of
from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest, describe
from testbed.redaction import redact
from testbed.specs.agent import AgentSpec
from testbed.specs.registries import BackendEntry

PATH_FIX = "install the package that has it, or run with its folder on PYTHONPATH (e.g. `PYTHONPATH=. testbed run ...`)"


class AgentImportError(Exception):
    """The spec's callable cannot be used; `problem` and `fix` are for the spec error."""

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}: {fix}")
        self.problem, self.fix = problem, fix


def load_callable(target: str, options: dict[str, Any] | None = None) -> Any:
    """The class or async function `module:name` names, imported now; AgentImportError saying why not and what to do."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise AgentImportError(f"module {module_name!r} cannot be found", PATH_FIX) from None
        raise AgentImportError(f"importing {module_name!r} failed: {describe(exc)}", f"install what {module_name} imports") from None
    except Exception as exc:
        raise AgentImportError(f"importing {module_name!r} raised {redact(describe(exc))[:200]}",
                               f"run `python -c 'import {module_name}'` to see where") from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            names = sorted(n for n, v in vars(module).items() if not n.startswith("_") and callable(v))[:8]
            raise AgentImportError(f"module {module_name!r} has no {attr!r}", f"name one it defines ({', '.join(names) or 'none'})")
        value = getattr(value, part)
    if inspect.isclass(value):
        if not inspect.iscoroutinefunction(getattr(value, "respond", None)):
            raise AgentImportError(f"class {target} has no async `respond(self, turn)`", "define `async def respond(self, turn)`")
    elif not inspect.iscoroutinefunction(value):
        raise AgentImportError(f"{target} is neither an async function nor a class",
                               "name an `async def` function, or a class with an async `respond`")
    elif options:
        raise AgentImportError(f"{target} is a function, which takes no options", "drop `options`, or make the agent a class")
    return value


def import_problem(spec: AgentSpec) -> tuple[str, str, str] | None:
    """(field, problem, fix) when the agent's callable cannot be imported or used; None when it can (the entry's check)."""
    try:
        load_callable(spec.callable or "", spec.options)
    except AgentImportError as exc:
        return "callable", exc.problem, exc.fix
    return None


def interrupted() -> bool:
    """Whether the running task is being cancelled from outside (the testbed's own interrupt: Ctrl-C, SIGTERM, a
    fatal error elsewhere), as opposed to an agent raising CancelledError or KeyboardInterrupt itself."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def reply_size(completion: Completion, limit: int) -> int:
    """The size of the reply's text and tool calls: its bytes of UTF-8 where `limit` falls between its character count
    and four bytes a character, else the character count, which settles the comparison alone (a 10 MB text is not
    encoded to learn that it is over 8 MB)."""
    parts = [completion.text, *(p for c in completion.tool_calls for p in (c.name, c.arguments))]
    chars = sum(len(p) for p in parts)
    if chars > limit or chars * 4 <= limit:
        return chars
    return sum(len(p.encode("utf-8", "surrogatepass")) for p in parts)


def in_units(size: int) -> str:
    """A byte count as people read it: `10.0 MB`, `5.9 KB`."""
    return f"{size / 1024 ** 2:,.1f} MB" if size >= 1024 ** 2 else f"{size / 1024:,.1f} KB"


class PythonAgentBackend:
    """A Python agent behind the Backend interface: one instance per conversation, every turn under `timeout_s`."""

    def __init__(self, spec: AgentSpec, target: Any):
        self.name, self.model = spec.name, spec.model
        self.capabilities = Capabilities()
        self.timeout_s = spec.timeout_s
        self.max_reply_bytes = spec.max_reply_bytes
        self.label = f"agent {spec.name} ({spec.callable})"
        self._target, self._options = target, dict(spec.options or {})
        self._builds = inspect.isclass(target)
        self._instances: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._unkeyed: Any = None

    async def start(self) -> None:
        """Nothing to start: the agent was imported by the entry's check; instances are built per episode."""

    def _instance(self, request: GenerateRequest) -> Any:
        """The episode's own agent (built on its first turn); a request without a conversation shares one."""
        if not self._builds:
            return None
        key = request.conversation
        found = self._instances.get(key) if key is not None else self._unkeyed
        if found is None:
            try:
                found = self._target(**self._options)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt) and interrupted():
                    raise
                raise BackendError(f"{self.label} could not be built: {self._described(exc)}") from None
            if key is None:
                self._unkeyed = found
            else:
                self._instances[key] = found
        return found

    async def generate(self, request: GenerateRequest) -> Completion:
        """One turn of the agent; its failure, junk, hang or oversized reply is a BackendError naming it.

        Whatever the agent raises is its episode's error, BaseExceptions included (CancelledError, SystemExit,
        KeyboardInterrupt, GeneratorExit): its coroutine is awaited in the episode's own task, never wrapped in a task
        of its own, whose SystemExit or KeyboardInterrupt asyncio would re-raise out of the event loop. Only the
        testbed's own interrupt goes on up: a cancellation of the episode's task (Ctrl-C, SIGTERM, a fatal error
        elsewhere) is told apart from a CancelledError the agent raised by the task's pending cancellations."""
        instance = self._instance(request)
        turn = AgentTurn(request.messages, request.tools, str(request.conversation or "none"), request.sampling())
        started = time.perf_counter()
        deadline = asyncio.timeout(self.timeout_s)
        try:
            async with deadline:
                reply = await (instance.respond(turn) if instance is not None else self._target(turn))
        except TimeoutError as exc:
            if deadline.expired():
                raise BackendError(f"{self.label} gave no reply within {self.timeout_s:g}s (timeout_s)") from None
            raise BackendError(f"{self.label} raised {self._described(exc)}") from None
        except BaseException as exc:
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)) and interrupted():
                raise
            raise BackendError(f"{self.label} raised {self._described(exc)}") from None
        try:
            completion = completion_of(reply, time.perf_counter() - started)
        except MalformedAgentReply as exc:
            raise BackendError(f"{self.label} returned {exc}") from None
        except Exception as exc:  # a dict reply whose arguments json.dumps cannot write (nested too deep), say
            raise BackendError(f"{self.label} returned a reply the testbed cannot read: {self._described(exc)}") from None
        size = reply_size(completion, self.max_reply_bytes)
        if size > self.max_reply_bytes:
            raise BackendError(f"{self.label} returned {in_units(size)} of text, over max_reply_bytes "
                               f"({self.max_reply_bytes:,} bytes): return less, or raise max_reply_bytes in its spec")
        return completion

    @staticmethod
    def _described(exc: BaseException) -> str:
        """`Type: message` of what the agent raised, keys redacted, cut to a line (its str() may itself raise)."""
        try:
            text = describe(exc)
        except Exception:
            text = type(exc).__name__
        return redact(text)[:300]

    async def close(self) -> None:
        """Drop every instance (an agent's own resources go with it)."""
        self._instances.clear()
        self._unkeyed = None


async def build_python(spec: AgentSpec, pool: Any) -> PythonAgentBackend:
    """The backend for a `backend: python` spec (its callable imported again: cheap, it is in sys.modules)."""
    try:
        return PythonAgentBackend(spec, load_callable(spec.callable or "", spec.options))
    except AgentImportError as exc:
        raise BackendUnavailable(f"agent {spec.name}: {exc}") from None


PYTHON = BackendEntry("python", build_python, capabilities={"continue_user_turn": False, "structured_output": False},
                      requires={"callable": "add callable: my_package.my_agent:MyAgent"}, needs_model=False,
                      own_fields=("callable", "options"), check=import_problem)
"""Your own agent in Python (testbed.backends.agent_protocol), imported before the run starts."""
