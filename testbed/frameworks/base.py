"""The framework seam: one protocol for every turn loop, the lookup by name, and what each can run."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from testbed.loop.orchestrator import Limits, TerminationReason
from testbed.loop.participants import Participant
from testbed.specs.errors import SpecError
from testbed.specs.registries import FRAMEWORKS, default_framework
from testbed.transcript import Message, Transcript

if TYPE_CHECKING:
    from testbed.frameworks.tool_episode import ToolEpisode

AfterAssistant = Callable[[Message, Transcript], TerminationReason | None]


class FrameworkNotInstalled(RuntimeError):
    """A framework whose optional packages are missing; the message says which extra to install."""


class Framework(Protocol):
    """Runs a conversation on `transcript` until a stop, appending every message; returns why it ended.

    The transcript may end with a user turn (the assistant speaks next) or an assistant turn (the
    user speaks next). A BackendError from either participant propagates; the caller records it
    with the transcript so far.
    """

    name: str

    async def converse(self, transcript: Transcript, assistant: Participant, user: Participant, limits: Limits,
                       after_assistant: AfterAssistant | None = None) -> TerminationReason:
        """Alternate the participants from whoever is next until a limit, a stop or `after_assistant` ends it."""

    async def run_task(self, episode: "ToolEpisode") -> TerminationReason:
        """Run a τ² task (testbed.frameworks.tool_episode): the assistant with the domain's tools, the user with its
        goal, every tool call executed and every message recorded through `episode`; return why it ended.
        Only frameworks whose entry lists the `tau2` kind have it."""


def framework(name: str = default_framework()) -> Framework:
    """The framework registered under `name` (testbed.specs.registries.FRAMEWORKS), imported on first use;
    an unknown name is an UnknownName error listing the known ones, a missing package FrameworkNotInstalled."""
    require_installed(name)
    return FRAMEWORKS.entry(name).load()()


def require_installed(name: str) -> None:
    """Raise FrameworkNotInstalled, naming the extra, when a module the framework needs is missing."""
    entry = FRAMEWORKS.entry(name)
    missing = [m for m in entry.modules if not _importable(m)]
    if missing:
        raise FrameworkNotInstalled(
            f"framework {name} is not installed (no module {missing[0]}): install the `{entry.extra}` extra "
            f"with .venv/bin/python -m pip install -e '.[{entry.extra}]' (scripts/bootstrap.sh installs it)"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def frameworks_for(kind: str) -> list[str]:
    """The registered frameworks that can run a scenario of `kind`, in registration order (`compare`'s default)."""
    return [n for n in FRAMEWORKS.names() if FRAMEWORKS.entry(n).kinds is None or kind in FRAMEWORKS.entry(n).kinds]


def supported_modes(name: str, modes) -> list[str]:
    """The user modes among `modes` the framework can run, in their order."""
    allowed = FRAMEWORKS.entry(name).user_modes
    return [m for m in modes if allowed is None or m in allowed]


def check_framework(name: str, scenario) -> None:
    """Refuse, before anything starts, a scenario the framework cannot run as asked: a kind, a user mode or
    a backend it has no way to do. Never a silent fallback to another framework."""
    entry = FRAMEWORKS.entry(name)
    spec = scenario.spec
    kinds = entry.kinds
    if kinds is not None and spec.kind not in kinds:
        raise SpecError(scenario.path, "kind", f"framework {name} cannot run a `{spec.kind}` scenario (it runs {', '.join(kinds)})",
                        "use --framework native for this scenario")
    modes = getattr(spec, "user_modes", ())
    unsupported = [m for m in modes if m not in supported_modes(name, modes)]
    if unsupported:
        why = ("its model client cannot continue the chat template's user turn" if unsupported[0] == "raw" else
               "its user is asked in the role-flipped chat only, as τ²'s own user simulator is")
        raise SpecError(scenario.path, "user_modes", f"framework {name} cannot run user mode {unsupported[0]} ({why})",
                        "pass --user-modes instructed (or set user_modes: [instructed]), or use --framework native")
    planted = [p for p in getattr(spec, "user_faults", ()) if p != "none"]
    if planted and name != default_framework():
        raise SpecError(scenario.path, "user_faults", f"framework {name} talks to the user's model itself, so the fault "
                        f"{planted[0]} cannot be planted in the user's turns (only the testbed's own loop wraps the user)",
                        f"use --framework {default_framework()}, or user_faults: [none]")
    backends = entry.backends
    for agent in (scenario.assistant, scenario.user):
        if backends is not None and agent.spec.backend not in backends:
            raise SpecError(agent.path, "backend", f"framework {name} talks to OpenAI-compatible servers; agent {agent.spec.name} "
                            f"uses backend `{agent.spec.backend}`", f"use one of: {', '.join(backends)}")
        if entry.owns_client and (len(agent.spec.urls) > 1 or agent.spec.server.replicas > 1):
            raise SpecError(agent.path, "base_urls" if agent.spec.base_urls else "server.replicas",
                            f"framework {name}'s model client sends to one base URL; agent {agent.spec.name} has several replicas",
                            "use --framework native, or put one load balancer's URL in base_url")
    require_installed(name)


def owns_client(name: str) -> bool:
    """True when the named framework builds its own model client (FrameworkEntry.owns_client)."""
    return FRAMEWORKS.entry(name).owns_client


def runs_sweeps(name: str) -> bool:
    """True when a sweep can be run by the named framework: a sweep runs the testbed's own loop
    (testbed.running.sweep_runner takes no framework), which a framework with its own client is not."""
    return not owns_client(name)
