"""One word for each shared idea: the default framework is read from the registry, and roles are compared through
testbed.transcript's constants and predicates, never by writing the string again.

A literal `"native"` default in a signature, or `message.role == "user"` in a report, is the vocabulary copied
into a module that then silently disagrees when the registry or the transcript changes.
"""

from __future__ import annotations

import ast

from imports import PACKAGE

from testbed.specs.registries import FRAMEWORKS, default_framework

FRAMEWORK_NAMERS = {"entries.py", "frameworks/catalogue.py"}
"""The registration and the module declaring the framework entries: the only places that write a framework's name."""


def framework_literals(source: str) -> list[int]:
    """Lines of string constants that are exactly the baseline framework's name (prose that mentions it is not one)."""
    name = default_framework()
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Constant) and node.value == name]


def test_the_scan_finds_a_framework_name_written_as_a_value():
    source = 'def run(framework: str = "native"):\n    """Runs with native."""\nX = ("native", f"{y} native")\n'
    assert framework_literals(source) == [1, 3]


def test_the_default_framework_is_the_registered_baseline():
    baselines = [name for name in FRAMEWORKS.names() if FRAMEWORKS.entry(name).baseline]
    assert baselines == [default_framework()], "register exactly one baseline framework, first (testbed/entries.py)"


def test_no_framework_name_is_written_outside_its_registration():
    found = {str(path.relative_to(PACKAGE)): lines for path in PACKAGE.rglob("*.py")
             if str(path.relative_to(PACKAGE)) not in FRAMEWORK_NAMERS and (lines := framework_literals(path.read_text()))}
    assert found == {}, "use testbed.specs.registries.default_framework() (or the entry's `baseline`)"
