"""τ² tests need the τ² package (the `tau2` extra, which scripts/bootstrap.sh installs); `tau2_spec` builds their
scenario: the mock domain's one task with scripted agents, any field overridden."""

import pytest

from helpers import REPO, write_yaml
from testbed.specs.loader import load_scenario

TASK = "create_task_1"

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")


@pytest.fixture
def tau2_spec(tmp_path):
    """A function building the τ² scenario with `overrides` applied to its spec; `seeded.yaml` is an agent whose spec
    fixes its seed."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user-tau2.md").write_text((REPO / "scenarios/prompts/user-tau2.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    write_yaml(tmp_path / "seeded.yaml", {"name": "seeded", "backend": "scripted", "model": "m", "outputs": ["x"],
                                          "sampling": {"seed": 7}})

    def make(**overrides):
        data = {"kind": "tau2", "name": "t", "domain": "mock", "tasks": {"ids": [TASK]}, "assistant": "scripted.yaml",
                "user": "scripted.yaml", "temperatures": [0.0], "max_tokens": 32, "max_steps": 20}
        data.update(overrides)
        return load_scenario(write_yaml(tmp_path / "t.yaml", data))

    return make
