"""The `testbed` command line."""

from testbed.cli.app import app, main

__all__ = ["app", "main"]
