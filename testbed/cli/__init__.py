"""The `testbed` command line."""

from testbed.cli import report as _report  # noqa: F401  (registers report)
from testbed.cli import judging as _judging  # noqa: F401  (registers the judging commands)
from testbed.cli import graphs as _graphs  # noqa: F401  (registers the graph command)
from testbed.cli import frameworks as _frameworks  # noqa: F401  (registers compare and wire)
from testbed.cli import replay as _replay  # noqa: F401  (registers replay and show-episode)
from testbed.cli import export as _export  # noqa: F401  (registers export)
from testbed.cli import plot as _plot  # noqa: F401  (registers plot)
from testbed.cli import fault_review as _fault_review  # noqa: F401  (registers review-faults)
from testbed.cli import review as _review  # noqa: F401  (registers review)
from testbed.cli import recover as _recover  # noqa: F401  (registers recover)
from testbed.cli.app import app, list_helps, main

list_helps(app)

__all__ = ["app", "main"]
