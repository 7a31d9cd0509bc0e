"""A τ² database copied on access: one parse per process, a fresh database per episode for a few milliseconds.

A τ² environment owns its database and its tools change it. Parsing the airline database takes a
third of a second and deep-copying it as long, so an episode instead gets a database whose dict
fields (flights, users, reservations …) are `CopyOnAccess` views of the one parsed at load: a record
is deep-copied the first time the episode reads it, and the parsed original is never touched.

A tool τ² declares read-only (`@is_tool(ToolType.READ)`: lookups and searches) changes nothing, so
while one runs the database lends its records instead of copying them (`lend_to_reads`): a flight
search reads 300 flights without deep-copying them (0.4 s of CPU before). What it returns is
serialised into the tool's answer before the call ends. tests/scenarios/tau2/test_cow_db.py runs every
read tool of the copied-on-access domains and checks the parsed database is unchanged and the answers
are a fresh environment's.
"""

from __future__ import annotations

import copy
import functools
from contextlib import contextmanager
from typing import Any


class CopyOnAccess(dict):
    """A dict over a pristine one whose values are deep-copied on first access (by key, `values()` or `items()`).

    The copy replaces the original value in this dict, so serialising the dict (pydantic reads it at
    C level) sees the episode's records where it touched them and the untouched originals elsewhere.
    While `lending` is above 0 (a read-only tool runs: `lent`) values are handed out as they are.
    """

    __slots__ = ("_copied", "lending")

    def __init__(self, pristine: dict):
        super().__init__(pristine)
        self._copied: set = set()
        self.lending = 0

    def _own(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self._copied and not self.lending:
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
        """Every value, each the episode's own copy (as it is while lending)."""
        if self.lending:
            return list(dict.values(self))
        return [self._own(k) for k in list(dict.keys(self))]

    def items(self):  # type: ignore[override]
        """Every (key, value), each value the episode's own copy (as it is while lending)."""
        if self.lending:
            return list(dict.items(self))
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


@contextmanager
def lent(db: Any):
    """While entered, `db`'s copied-on-access fields hand out their values without copying: for code that only reads."""
    values = (getattr(db, n, None) for n in type(db).model_fields) if db is not None else ()
    fields = [v for v in values if isinstance(v, CopyOnAccess)]
    for f in fields:
        f.lending += 1
    try:
        yield
    finally:
        for f in fields:
            f.lending -= 1


@functools.cache
def read_tools(toolkit_type: type) -> frozenset[str]:
    """The tools a τ² toolkit class declares read-only (`ToolType.READ`)."""
    from tau2.environment.toolkit import TOOL_TYPE_ATTR, ToolType

    return frozenset(name for name in dir(toolkit_type)
                     if getattr(getattr(toolkit_type, name, None), TOOL_TYPE_ATTR, None) == ToolType.READ)


def lend_to_reads(toolkit: Any) -> None:
    """Make `toolkit`'s read-only tools read its database without copying records (`lent` around each such call)."""
    reads, use_tool = read_tools(type(toolkit)), toolkit.use_tool

    def lending_use_tool(tool_name: str, **kwargs: Any) -> Any:
        if tool_name in reads:
            with lent(toolkit.db):
                return use_tool(tool_name, **kwargs)
        return use_tool(tool_name, **kwargs)

    toolkit.use_tool = lending_use_tool
