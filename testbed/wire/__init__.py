"""The wire log: every request a framework sends to a model, recorded exactly by a proxy the testbed
runs in front of the model servers, and attributed to the episode and turn it produced."""

from testbed.wire.proxy import EpisodeTap, WireRecorder

__all__ = ["EpisodeTap", "WireRecorder"]
