"""τ² tests need the τ² package (the `tau2` extra, which scripts/bootstrap.sh installs)."""

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")
