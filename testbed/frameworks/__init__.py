"""Frameworks: who runs the turn loop. Each takes the same participants and limits and writes the same
transcript, so that conversations run by different frameworks can be compared turn by turn.

Today there is one, `native` (the testbed's own loop); agent frameworks come behind the same
`Framework` protocol.
"""

from testbed.frameworks.base import Framework, framework

__all__ = ["Framework", "framework"]
