"""The package imports in one direction: no cycle between modules, and none between testbed's subpackages."""

from __future__ import annotations

from imports import cycles, import_graph


def packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to `testbed.<first part>` (subpackages and top-level modules)."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        top = ".".join(module.split(".")[:2])
        out.setdefault(top, set()).update(".".join(d.split(".")[:2]) for d in deps)
        out[top].discard(top)
    return out


def test_the_checker_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_import_cycles():
    assert cycles(import_graph()) == []


def test_no_package_import_cycles():
    assert cycles(packages(import_graph())) == []
