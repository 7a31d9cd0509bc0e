"""One model served by several servers (replicas): least-in-flight routing and failover.

Each replica is an OpenAI-compatible backend of its own. A request goes to the live replica with
the fewest requests in flight. When a replica stops answering (a request fails on the transport
and its health check, `GET /models`, fails too) it is taken out for the rest of the run and the
request is sent again to another replica; a request a live replica refuses for a transient reason
(5xx, 429, timeout) is retried on the least-loaded replica with capped backoff. Only when every
replica is out does the run stop. Episodes are written only when they finish, so a replica dying
mid-run neither loses a finished episode nor duplicates one: the turn in flight is simply redone.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest


@dataclass
class Replica:
    """One server of the set, with what it did in this run."""

    backend: object
    url: str
    in_flight: int = 0
    served: int = 0
    """Requests it answered."""
    retried: int = 0
    """Requests that failed here and were sent again (here or to another replica)."""
    out_reason: str | None = None
    """Why it was taken out, or None while it is live."""


@dataclass(frozen=True)
class ReplicaCount:
    """What one replica did in one invocation of a run: for the store and the report."""

    agent: str
    url: str
    served: int
    retried: int
    out_reason: str | None = None


@dataclass
class ReplicaSet:
    """A backend spreading requests over replicas of one model; the Backend interface, so participants never know."""

    name: str
    model: str
    capabilities: Capabilities
    replicas: list[Replica]
    max_retries: int = 4
    backoff_base_s: float = 0.25
    backoff_cap_s: float = 4.0
    _turn: int = field(default=0, repr=False)

    @property
    def live(self) -> list[Replica]:
        """The replicas still in the set."""
        return [r for r in self.replicas if r.out_reason is None]

    async def start(self) -> None:
        """Start every replica; one that cannot be reached at the start is taken out (the run goes on on the
        others), and when none can, the run stops naming each URL and why."""
        results = await asyncio.gather(*(r.backend.start() for r in self.replicas), return_exceptions=True)
        for replica, result in zip(self.replicas, results):
            if isinstance(result, BackendUnavailable):
                replica.out_reason = result.reason
            elif isinstance(result, BaseException):
                raise result
        if not self.live:
            raise BackendUnavailable(self._none_left())

    def _none_left(self) -> str:
        reasons = "; ".join(f"{r.url}: {r.out_reason}" for r in self.replicas)
        return f"every replica of {self.name} stopped answering ({reasons})"

    def _pick(self) -> Replica:
        live = self.live
        if not live:
            raise BackendUnavailable(self._none_left())
        fewest = min(r.in_flight for r in live)
        tied = [r for r in live if r.in_flight == fewest]
        self._turn += 1
        return tied[self._turn % len(tied)]

    async def generate(self, request: GenerateRequest) -> Completion:
        """Send the request to the least-loaded live replica; on a replica's death or a transient failure, send
        it again elsewhere; raise BackendError with the last reason once the retries are spent."""
        failures = 0
        while True:
            replica = self._pick()
            replica.in_flight += 1
            try:
                completion = await replica.backend.generate(request)
            except BackendUnavailable as exc:
                replica.retried += 1
                if replica.out_reason is None:
                    replica.out_reason = exc.reason
                continue
            except BackendError as exc:
                if not exc.retryable:
                    raise
                replica.retried += 1
                failures += 1
                if failures > self.max_retries:
                    raise BackendError(f"{exc.reason} (gave up after {failures} tries over the replicas)", retryable=True) from None
                await asyncio.sleep(min(self.backoff_cap_s, self.backoff_base_s * 2 ** (failures - 1)) * (0.5 + random.random() / 2))
                continue
            finally:
                replica.in_flight -= 1
            replica.served += 1
            return completion

    def counts(self) -> list[ReplicaCount]:
        """What each replica did so far."""
        return [ReplicaCount(self.name, r.url, r.served, r.retried, r.out_reason) for r in self.replicas]

    async def close(self) -> None:
        """Close every replica's connections."""
        for replica in self.replicas:
            await replica.backend.close()
