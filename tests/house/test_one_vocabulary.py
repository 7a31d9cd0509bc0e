"""One word for each shared idea: the default framework is read from the registry, and roles are compared through
testbed.transcript's constants and predicates, never by writing the string again.

A literal `"native"` default in a signature, or `message.role == "user"` in a report, is the vocabulary copied
into a module that then silently disagrees when the registry or the transcript changes.
"""

from __future__ import annotations

import ast

from imports import PACKAGE

from testbed.specs.registries import FRAMEWORKS, default_framework
from testbed.transcript import ASSISTANT, SYSTEM, TOOL, USER

FRAMEWORK_NAMERS = {"entries.py", "frameworks/catalogue.py"}
"""The registration and the module declaring the framework entries: the only places that write a framework's name."""
ROLES = {USER, ASSISTANT, SYSTEM, TOOL}
ROLE_OWNERS = {"transcript.py"}
"""The module that declares the roles (the store's schema writes them in SQL, which no Python comparison is)."""
KNOWN_LEFTOVERS: dict[str, int] = {}
"""Comparisons left for their module's owner, by file: count (a leftover listed here must still be there)."""


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


def _is_role(node: ast.AST) -> bool:
    """Whether the expression reads a role: `role`, `x_role`, `m.role`, `m["role"]`, `m.get("role")`."""
    if isinstance(node, ast.Name):
        return node.id == "role" or node.id.endswith("_role")
    if isinstance(node, ast.Attribute):
        return node.attr == "role" or node.attr.endswith("_role")
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and (key.value == "role" or key.value.endswith("_role"))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        return isinstance(node.args[0], ast.Constant) and node.args[0].value == "role"
    return False


def _role_strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & ROLES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(set(), *(_role_strings(e) for e in node.elts))
    return set()


def role_literals(source: str) -> list[int]:
    """Lines where a role string is compared with a role: `==`, `!=`, `in`, either side, or pandas' `.eq`, `.ne`, `.isin`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_role(s) for s in sides) and any(_role_strings(s) for s in sides):
                found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("eq", "ne", "isin")
              and _is_role(node.func.value) and any(_role_strings(a) for a in node.args)):
            found.append(node.lineno)
    return sorted(found)


def test_the_scan_finds_role_strings_compared_with_roles():
    source = ('a = m.role == "user"\nb = "tool" != row["role"]\nc = role in ("user", "assistant")\n'
              'd = frame[frame.role.eq("system")]\ne = df["role"].isin(["tool"])\nf = m.get("role") == "assistant"\n'
              'g = m.role == USER\nh = is_user(m)\ni = speaker == "user"\nj = {"role": "user"}\nk = "user" if x else "tool"\n')
    assert role_literals(source) == [1, 2, 3, 4, 5, 6]


def test_roles_are_compared_through_the_transcript_vocabulary():
    found = {str(path.relative_to(PACKAGE)): len(lines) for path in PACKAGE.rglob("*.py")
             if str(path.relative_to(PACKAGE)) not in ROLE_OWNERS and (lines := role_literals(path.read_text()))}
    assert found == KNOWN_LEFTOVERS, "compare roles with testbed.transcript's USER, ASSISTANT, SYSTEM, TOOL or is_user(m), ..."
