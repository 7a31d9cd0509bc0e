"""A small lazy registry: names bound to import paths and declared metadata, imported on first use.

The testbed has open sets of things chosen by name in a spec (scenario kinds, backends, judge
kinds). Declaring each by name with a `module:attr` string, instead of branching on the name,
lets the spec layer know every name and its declared facts without importing implementations,
and lets a new entry be added in one place (or by a test) without touching the code that uses it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

E = TypeVar("E")


class UnknownName(LookupError):
    """A name no entry is registered under; the message lists the known names, so it says what to write."""

    def __init__(self, what: str, name: object, known: tuple[str, ...]):
        self.what, self.name, self.known = what, name, known
        super().__init__(f"unknown {what} {name!r}: use one of {', '.join(known)}")

    def __str__(self) -> str:
        return self.args[0]


def import_path(path: str) -> Any:
    """The object a `module:attr` (or `module:attr.inner`) string names, importing the module.

    Kept separate from `Ref` so a registry entry's main target and its declared hooks resolve alike.
    """
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{path!r} is not an import path: write it as `package.module:name`")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


@dataclass(frozen=True)
class Ref:
    """Declared metadata that is code: an import path resolved only when the entry's user needs it.

    Plain metadata (strings, numbers, dicts) is read as is; a `Ref` marks the values that would
    otherwise force an import at declaration time.
    """

    path: str

    def load(self) -> Any:
        """The object the path names (imported now if it was not yet)."""
        return import_path(self.path)


@dataclass(frozen=True)
class Entry:
    """One registered name: its main import path and what it declares about itself."""

    name: str
    target: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def load(self) -> Any:
        """The main object (a class, a builder function), imported on first use and cached."""
        if "target" not in self._cache:
            self._cache["target"] = import_path(self.target)
        return self._cache["target"]

    def resolve(self, key: str, default: Any = None) -> Any:
        """Declared metadata `key`; a `Ref` (or a tuple of them) is imported, anything else returned as is."""
        value = self.meta.get(key, default)
        if isinstance(value, Ref):
            return value.load()
        if isinstance(value, tuple) and any(isinstance(v, Ref) for v in value):
            return tuple(v.load() if isinstance(v, Ref) else v for v in value)
        return value

    def __getitem__(self, key: str) -> Any:
        return self.meta[key]


class Registry(Generic[E]):
    """Entries by name, in registration order; `what` names the set in error messages ("backend").

    Registering validates only the shape of the import path: nothing is imported until an entry
    is loaded, so declaring a registry costs nothing and cannot fail on a missing optional package.
    A typed registry (`entry_type`) has each name point at an `entry_type` object declared in the
    module that implements it; `entry(name)` imports that module and returns the object.
    """

    def __init__(self, what: str, entry_type: type[E] | None = None):
        self.what = what
        self.entry_type = entry_type
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, target: str, **meta: Any) -> Entry:
        """Add an entry; a name registered twice is an error, so two declarations cannot silently disagree."""
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is already registered")
        if ":" not in target:
            raise ValueError(f"{target!r} is not an import path: write it as `package.module:name`")
        entry = Entry(name, target, MappingProxyType(dict(meta)))
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry (tests that register a fake one remove it again)."""
        self.get(name)
        del self._entries[name]

    def get(self, name: object) -> Entry:
        """The entry for `name`, or UnknownName listing the known names."""
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise UnknownName(self.what, name, self.names())
        return entry

    def load(self, name: object) -> Any:
        """The main object of the named entry, imported on first use."""
        return self.get(name).load()

    def entry(self, name: object) -> E:
        """The typed entry registered under `name`, imported on first use; a target of another type,
        or one declaring another name, is a TypeError naming the import path, so a wrong registration
        fails where it is made instead of where a field is read."""
        registered = self.get(name)
        value = registered.load()
        if self.entry_type is not None and not isinstance(value, self.entry_type):
            raise TypeError(f"{registered.target} is a {type(value).__name__}, not a {self.entry_type.__name__} "
                            f"({self.what} {registered.name!r})")
        declared = getattr(value, "name", registered.name)
        if declared != registered.name:
            raise TypeError(f"{registered.target} declares {self.what} {declared!r} but is registered as {registered.name!r}")
        return value

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order."""
        return tuple(self._entries)

    def one_of(self, names: Sequence[str] | None = None) -> str:
        """The names (all, or those given) as pydantic lists a Literal's choices in its error (`'a', 'b' or 'c'`),
        so messages stay the same."""
        quoted = [repr(n) for n in (self._entries if names is None else names)]
        return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def __iter__(self) -> Iterator[E]:
        """Every entry (`entry(name)`), in registration order, each imported now if it was not yet."""
        return iter([self.entry(name) for name in self._entries])

    def __len__(self) -> int:
        return len(self._entries)
