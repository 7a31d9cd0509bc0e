"""The local classifier: labels simulated-user turns with fast, deterministic text rules."""

from testbed.judges.local.judge import LocalJudge, classify

__all__ = ["LocalJudge", "classify"]
