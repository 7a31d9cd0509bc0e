"""Extension points are typed entries declared beside their code, and no import path names a module above it.

An import path in a string (`"testbed.cli.app:print_table"`) is an import the import checks do not
see: a spec-layer registry naming a CLI function is a cycle hidden in a string. Here every such string
counts as an import of the module that holds it, and the package graph must stay acyclic; and every
registered name must resolve to an entry of its registry's type that declares the same name.
"""

from __future__ import annotations

import ast
import re

from imports import PACKAGE, cycles, import_graph, module_name
from test_import_cycles import packages

from testbed.specs.registries import BACKENDS, FRAMEWORKS, JUDGE_KINDS, KINDS, REPORTS

IMPORT_PATH = re.compile(r"^(testbed(?:\.\w+)*):[\w.]+$")
REGISTRIES = (KINDS, BACKENDS, JUDGE_KINDS, FRAMEWORKS, REPORTS)


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
    for registry in REGISTRIES:
        assert registry.entry_type is not None, registry.what
        for name in registry.names():
            entry = registry.entry(name)
            assert isinstance(entry, registry.entry_type) and entry.name == name
            assert dict(registry.get(name).meta) == {}, f"{registry.what} {name}: declare its facts in its entry"


def test_the_registrations_live_in_one_module_at_the_top():
    """Registries are filled only by testbed/entries.py (and tests' fakes), which the package imports first."""
    registering = sorted(module_name(p) for p in PACKAGE.rglob("*.py")
                         if re.search(r"^(KINDS|BACKENDS|JUDGE_KINDS|FRAMEWORKS|REPORTS)\.register\(", p.read_text(), re.M))
    assert registering == ["testbed.entries"]
    assert "from testbed import entries" in (PACKAGE / "__init__.py").read_text()
