"""A τ² database copied on access: one parse per process, a fresh database per episode for a few milliseconds.

A τ² environment owns its database and its tools change it. Parsing the airline database takes a
third of a second and deep-copying it as long, so an episode instead gets a database whose dict
fields (flights, users, reservations …) are `CopyOnAccess` views of the one parsed at load: a record
is deep-copied the first time the episode reads it, and the parsed original is never touched.
"""

from __future__ import annotations

import copy
from typing import Any


class CopyOnAccess(dict):
    """A dict over a pristine one whose values are deep-copied on first access (by key, `values()` or `items()`).

    The copy replaces the original value in this dict, so serialising the dict (pydantic reads it at
    C level) sees the episode's records where it touched them and the untouched originals elsewhere.
    """

    __slots__ = ("_copied",)

    def __init__(self, pristine: dict):
        super().__init__(pristine)
        self._copied: set = set()

    def _own(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self._copied:
            value = copy.deepcopy(value)
            dict.__setitem__(self, key, value)
            self._copied.add(key)
        return value

    def __getitem__(self, key: Any) -> Any:
        return self._own(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._copied.add(key)

    def get(self, key: Any, default: Any = None) -> Any:
        """The episode's own copy of the value, or `default`."""
        return self._own(key) if key in self else default

    def pop(self, key: Any, *default: Any) -> Any:
        """Remove a key and return the episode's own copy of its value."""
        if key not in self:
            return dict.pop(self, key, *default)
        value = self._own(key)
        dict.pop(self, key)
        return value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """The episode's own copy of the value, set to `default` first when absent."""
        if key not in self:
            self[key] = default
        return self._own(key)

    def values(self):  # type: ignore[override]
        """Every value, each the episode's own copy."""
        return [self._own(k) for k in list(dict.keys(self))]

    def items(self):  # type: ignore[override]
        """Every (key, value), each value the episode's own copy."""
        return [(k, self._own(k)) for k in list(dict.keys(self))]

    def __deepcopy__(self, memo: dict) -> dict:
        return {k: copy.deepcopy(v, memo) for k, v in dict.items(self)}

    def __reduce__(self):
        return dict, (dict(dict.items(self)),)


def fresh_copy(db: Any) -> Any:
    """A database of the same model whose dict fields are `CopyOnAccess` over `db`'s and whose other fields are deep copies."""
    fields = {}
    for name in type(db).model_fields:
        value = getattr(db, name)
        fields[name] = CopyOnAccess(value) if isinstance(value, dict) else copy.deepcopy(value)
    return type(db).model_construct(**fields)
