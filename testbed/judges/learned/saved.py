"""What both learned-judge model kinds share: writing the file atomically and the digest that names it."""

from __future__ import annotations

import hashlib
from pathlib import Path


class SavedModel:
    """What both model kinds share: `save` and `digest`, built on the kind's own `to_json`."""

    def to_json(self) -> str:
        """The model as canonical JSON; each kind writes its own."""
        raise NotImplementedError

    def save(self, path: Path) -> None:
        """Write the model atomically."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)

    @property
    def digest(self) -> str:
        """A short hash of the whole model: two files with the same digest judge alike."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:10]
