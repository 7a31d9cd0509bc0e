"""Participants whose requests go through an episode's tap on the wire recorder."""

from __future__ import annotations

from testbed.wire.faults import RetryPolicy
from testbed.wire.proxy import EpisodeTap


def routed(participant, tap: EpisodeTap, role: str):
    """The participant with its backend sending through `tap` as `role` (with the backend's own fault handling
    when the tap retries); unchanged when its backend cannot be routed (a scripted or litellm backend has no
    base URL to put a proxy in front of)."""
    backend = participant.backend
    if not hasattr(backend, "routed"):
        return participant
    base_url = tap.route(role, backend.base_url, RetryPolicy.of(backend, retry=tap.retry), getattr(backend, "path", "chat/completions"))
    route = backend.routed(base_url, tap.headers, tap.recorder.http_clients if tap.retry else None)
    if hasattr(participant, "derive"):
        return participant.derive(backend=route)
    return type(participant)(participant.agent, route)
