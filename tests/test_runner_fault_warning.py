"""A fault detector that fails as a run ends costs the run nothing: one warning, its reason drawn literally."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from hostile_text import FORBIDDEN
from testbed.running import user_faults


class FailingDetector:
    """Raises with a reason made of an escape sequence and rich markup."""

    def store_faults(self, store, run_id):
        raise RuntimeError("\x1b[2J[bold red]boom[/bold red]\x07")


def test_a_failing_detector_prints_one_literal_warning(monkeypatch):
    monkeypatch.setattr(user_faults, "kind_views", lambda kind: SimpleNamespace(faults=FailingDetector()))
    out = io.StringIO()
    user_faults.store_user_faults(store=None, run_id="r1", kind="any", console=Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "user faults of r1 not stored (RuntimeError:" in text and "`testbed judge r1` stores them" in text
    assert "[bold red]boom[/bold red]" in text, "the reason's markup is printed as text, not applied"
    assert not set(text) & FORBIDDEN, "no escape sequence or bell reaches the terminal"
