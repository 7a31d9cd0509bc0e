"""Participants whose requests go through an episode's tap on the wire recorder."""

from __future__ import annotations

from testbed.wire.proxy import EpisodeTap


def routed(participant, tap: EpisodeTap, role: str):
    """The participant with its backend sending through `tap` as `role`; unchanged when its backend cannot be
    routed (a scripted or litellm backend has no base URL to put a proxy in front of)."""
    backend = participant.backend
    if not hasattr(backend, "routed"):
        return participant
    route = backend.routed(tap.route(role, backend.base_url))
    if hasattr(participant, "derive"):
        return participant.derive(backend=route)
    return type(participant)(participant.agent, route)
