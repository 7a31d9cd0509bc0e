"""Backends: how text is generated. One async interface; providers are imported when used."""

from testbed.backends.base import Backend, BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest

__all__ = ["Backend", "BackendError", "BackendUnavailable", "Capabilities", "Completion", "GenerateRequest"]
