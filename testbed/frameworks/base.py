"""The framework seam: one protocol for every turn loop, and the lookup by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from testbed.orchestrator import Limits, TerminationReason
from testbed.participants import Participant
from testbed.specs.registries import FRAMEWORKS
from testbed.transcript import Message, Transcript

AfterAssistant = Callable[[Message, Transcript], TerminationReason | None]



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


def framework(name: str = "native") -> Framework:
    """The framework registered under `name` (testbed.specs.registries.FRAMEWORKS), imported on first use;
    an unknown name is an UnknownName error listing the known ones."""
    return FRAMEWORKS.load(name)()
