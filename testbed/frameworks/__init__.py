"""Frameworks: who runs the turn loop. Each takes the same participants and limits and writes the same
transcript, so that conversations run by different frameworks can be compared turn by turn.

`native` is the testbed's own loop; `autogen`, `langgraph` and `camel` build the same assistant ⇄
simulated-user pair the way each framework's documentation does (testbed.frameworks.pair), as an
optional extra imported only when used.
"""

from testbed.frameworks.base import Framework, FrameworkNotInstalled, check_framework, framework

__all__ = ["Framework", "FrameworkNotInstalled", "check_framework", "framework"]
