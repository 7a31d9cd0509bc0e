"""Shared fixtures: spec files written into a temporary folder, a fresh store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import REPO, write_yaml

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

@pytest.fixture
def spec_dir(tmp_path: Path):
    """A folder with a scripted agent, the instructed prompt and a probe scenario factory."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "scripted", "backend": "scripted", "model": "scripted-model", "outputs": ["x"], "concurrency": 1})

    def scenario(**overrides) -> Path:
        data = {
            "kind": "probe", "name": "probe-test", "dataset": "gsm8k", "items": {"limit": 3},
            "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["raw", "instructed"],
            "user_prompt_file": "prompts/user.md", "temperatures": [0.0, 1.0], "max_tokens": 32,
        }
        data.update(overrides)
        return write_yaml(tmp_path / f"{data['name']}.yaml", data)

    return scenario


@pytest.fixture
def store(tmp_path: Path):
    """A fresh SQLite store in the temporary folder."""
    from testbed.store import Store

    s = Store(tmp_path / "store.sqlite")
    yield s
    s.close()
