"""Extension points are typed entries declared beside their code, registered only in testbed/entries.py, and no
import path names a module above it.

An import path in a string (`"testbed.cli.app:print_table"`) is an import the import checks do not
see: a spec-layer registry naming a CLI function is a cycle hidden in a string. Here every such string
counts as an import of the module that holds it, and the package graph must stay acyclic; and every
registered name must resolve to an entry of its registry's type that declares the same name. Registries are
made in two modules (testbed.specs.registries, testbed.datasets.catalog) and filled in one (testbed.entries):
a registry made, or a name registered (by a call or a decorator), anywhere else fails here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from imports import PACKAGE, cycles, import_graph, module_name
from test_import_cycles import packages

from testbed.registry import Registry

IMPORT_PATH = re.compile(r"^(testbed(?:\.\w+)*):[\w.]+$")
REGISTRY_HOMES = {"testbed.specs.registries", "testbed.datasets.catalog"}
"""The modules that make the registries; only testbed.entries fills them."""
READS = {"get", "entry", "load", "names", "one_of"}
"""What a module other than testbed.entries may call on a registry."""


def string_imports(source: str) -> set[str]:
    """The modules named by `module:attr` string constants in one module's source (docstrings included)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (m := IMPORT_PATH.match(node.value.strip())):
            found.add(m.group(1))
    return found


def graph_with_string_imports() -> dict[str, set[str]]:
    """The import graph with every import-path string counted as an import of the module holding it."""
    graph = import_graph()
    for path in PACKAGE.rglob("*.py"):
        if "_builtin" not in path.parts:
            graph[module_name(path)] |= string_imports(path.read_text()) - {module_name(path)}
    return graph


def test_the_scan_counts_an_import_path_string_as_an_import():
    assert string_imports('X.register("a", "testbed.cli.app:print_table")\nY = "not:a path"') == {"testbed.cli.app"}
    graph = {"testbed.specs.x": {"testbed.cli.app"}, "testbed.cli.app": {"testbed.specs.x"}}
    assert cycles(packages(graph)) == [["testbed.cli", "testbed.specs"]]


def test_no_import_path_string_names_a_module_above_it():
    assert cycles(packages(graph_with_string_imports())) == []


def test_every_registered_name_is_a_typed_entry_declaring_that_name():
    for registry in registries().values():
        assert isinstance(registry, Registry) and registry.entry_type is not None, registry.what
        for name in registry.names():
            entry = registry.entry(name)
            assert isinstance(entry, registry.entry_type) and getattr(entry, "name", name) == name
            assert dict(registry.get(name).meta) == {}, f"{registry.what} {name}: declare its facts in its entry"


def registry_names(source: str) -> set[str]:
    """The names a module binds to a new registry (`X = Registry(...)`, `X: Registry[...] = FigureRegistry()`)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1].endswith("Registry"):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def registrations(source: str, registries: set[str]) -> list[str]:
    """Each call on a registry that is not a read (`KINDS.register(...)`, `@FIGURES.figure(...)`, `REPORTS.add(x)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in READS:
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            if name in registries:
                found.append(ast.unparse(node.func))
    return found


def registries() -> dict[str, Registry]:
    """Every registry by name, read from its home (a registry added there is checked here without a change)."""
    found = {}
    for home in sorted(REGISTRY_HOMES):
        module = importlib.import_module(home)
        found |= {name: getattr(module, name) for name in registry_names(Path(module.__file__).read_text())}
    return found


def test_the_scan_finds_registries_and_registrations_by_call_or_decorator():
    assert registry_names('A: Registry[E] = Registry("a", E)\nB = FigureRegistry()\nC = dict()') == {"A", "B"}
    source = ('KINDS.register("x", "m:X")\n@FIGURES.figure("f", "F", draw="m:d")\ndef f(inputs): ...\n'
              'registries.REPORTS.add(R)\nKINDS.entry("x"); FIGURES.names(); other.register("y")\n')
    assert registrations(source, {"KINDS", "FIGURES", "REPORTS"}) == ["KINDS.register", "FIGURES.figure", "registries.REPORTS.add"]


def test_the_registrations_live_in_one_module_at_the_top():
    """Registries are made in their two homes and filled only by testbed/entries.py (and tests' fakes), which the
    package imports first."""
    sources = {module_name(p): p.read_text() for p in PACKAGE.rglob("*.py")}
    making = {module for module, source in sources.items() if registry_names(source)}
    assert making == REGISTRY_HOMES
    names = set(registries())
    assert {"KINDS", "FRAMEWORKS", "DATASETS", "FIGURES"} <= names
    registering = sorted(module for module, source in sources.items() if registrations(source, names))
    assert registering == ["testbed.entries"]
    assert "from testbed import entries" in (PACKAGE / "__init__.py").read_text()
