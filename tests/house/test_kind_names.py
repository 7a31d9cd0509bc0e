"""A kind's name stays inside the kind: no flag, name prefix, string prefix or import names it from outside.

`test_no_branches` catches a comparison with a registered name (`kind == "probe"`); knowledge of a kind can leak in
other shapes too, each of which a new kind would silently fall through:

- a *flag* named after a registered name (of any registry): `catalog.tau2`, `view.tau2`, a field `tau2: bool`;
- an *identifier* with a kind's name as prefix, or the name itself: `TAU2_COLUMNS`, `tau2_columns`, `Tau2Call`, `tau2 = ...`;
- a *string* with a kind's name as prefix: `"tau2-"` (the dataset name `tau2-<domain>` built or parsed);
- an *import* of a kind's own package (`testbed.scenarios.tau2`, `testbed.analysis.tau2`) or of the outside package
  named after it (`tau2`).

The last three apply to the kinds that have packages of their own (a directory named after the kind holding its
entry, its views or its report): the conversation kinds that are one module each (probe, dialogue, information
gathering) are the core the loop and the frameworks are built around, and their branches are test_no_branches'.
A kind's own modules are read off the registries: the packages (or modules) named after it that hold its KINDS
entry, its VIEWS entry, its report and its spec class. Docstrings are prose and may name anything.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from testbed.datasets import DATASETS
from testbed.specs import registries
from testbed.specs.registries import BACKENDS, FRAMEWORKS, JUDGE_KINDS, KINDS, REPORTS

PACKAGE = Path(__file__).resolve().parents[2] / "testbed"
ALLOWED = {
    "entries.py": "registers every entry by name and import path (the kind's backend, figure and views among them)",
    "specs/registries.py": "declares the registries and their entry types",
    "frameworks/catalogue.py": "declares the frameworks' entries, with the backends each can drive (the scripted τ² user's among them)",
}
"""Modules outside every kind that may name one, and why."""
REGISTRIES = (KINDS, BACKENDS, JUDGE_KINDS, FRAMEWORKS, DATASETS)


def flag_names() -> set[str]:
    """Every registered name as it can be an identifier (`tau2-scripted` → `tau2_scripted`)."""
    return {n.replace("-", "_") for r in REGISTRIES for n in r.names()}


def _module_file(module: str) -> Path:
    return Path(importlib.util.find_spec(module).origin)


def own_paths(kind: str) -> set[str]:
    """The kind's own modules, relative to the package: the directory (`scenarios/tau2/`) or file (`specs/tau2.py`)
    named after it that holds its entry, its views, its report or its spec class."""
    entry = KINDS.entry(kind)
    modules = [KINDS.get(kind).target.partition(":")[0], REPORTS.get(entry.report).target.partition(":")[0],
               entry.spec.__module__]
    views = getattr(entry, "views", None)
    if views is not None:
        modules.append(registries.VIEWS.get(views).target.partition(":")[0])
    out = set()
    for module in modules:
        path = _module_file(module)
        if path.parent.name == kind:
            out.add(path.parent.relative_to(PACKAGE).as_posix() + "/")
        elif path.stem == kind:
            out.add(path.relative_to(PACKAGE).as_posix())
    return out


def packaged_kinds() -> dict[str, set[str]]:
    """Kind → its own modules, for the kinds that have a package of their own."""
    kinds = {kind: own_paths(kind) for kind in KINDS.names()}
    return {kind: paths for kind, paths in kinds.items() if any(p.endswith("/") for p in paths)}


def _packages(own: set[str]) -> set[str]:
    """The dotted names of a kind's own packages and modules (`testbed.scenarios.tau2`)."""
    return {"testbed." + p.rstrip("/").removesuffix(".py").replace("/", ".") for p in own}


def _prefixed(identifier: str, kind: str) -> bool:
    lowered = identifier.lower()
    return lowered.startswith(kind + "_") or (lowered.startswith(kind) and len(identifier) > len(kind)
                                              and (identifier[len(kind)].isupper() or identifier[len(kind)].isdigit()))


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.rpartition(".")[2]]
    return []


def leaks(source: str, flags: set[str], kinds: dict[str, set[str]]) -> list[str]:
    """What in one module's source names a registered name as a flag, or a packaged kind by prefix, string or import,
    each as `line: what`. `kinds` maps each packaged kind to the dotted names of its own packages."""
    tree = ast.parse(source)
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found = set()
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in flags and id(node) not in called:
            found.add((line, f"flag {ast.unparse(node)}"))
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id in flags:
                    found.add((item.lineno, f"flag field {node.name}.{item.target.id}"))
        for kind, packages in kinds.items():
            named = isinstance(node, (ast.Name, ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            found |= {(line, f"name {name}") for name in _identifiers(node)
                      if _prefixed(name, kind) or (named and name.lower() == kind)}
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and node.value.startswith((f"{kind}-", f"{kind}_")):
                found.add((line, f"string {node.value[:40]!r}"))
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for module in imported:
                if module == kind or module.startswith(f"{kind}.") or any(module == p or module.startswith(p + ".") for p in packages):
                    found.add((line, f"import {module}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _owner(rel: str, kinds: dict[str, set[str]]) -> str | None:
    return next((kind for kind, own in kinds.items() for p in own if rel == p or (p.endswith("/") and rel.startswith(p))), None)


def scan(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Leaks per module under `root` (relative path → findings); a kind's own modules are checked for the other kinds'
    names only, the allowed modules not at all."""
    kinds = packaged_kinds()
    flags = flag_names()
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED or "_builtin" in path.parts:
            continue
        owner = _owner(rel, kinds)
        others = {kind: _packages(own) for kind, own in kinds.items() if kind != owner}
        found = leaks(path.read_text(), flags - {owner}, others)
        if found:
            out[rel] = found
    return out


TAU2 = {"tau2": {"testbed.scenarios.tau2", "testbed.analysis.tau2"}}


def test_the_scanner_finds_each_kind_of_leak():
    code = '''
"""A docstring may say tau2-airline and testbed.scenarios.tau2."""
import tau2
from tau2.data_model.message import ToolCall as Tau2Call
from testbed.scenarios.tau2.user_faults import UserFault
from testbed.analysis.tau2 import faults
if catalog.tau2: pass
view = EpisodeView(tau2=True)
TAU2_COLUMNS = frozenset({"faults"})
def tau2_columns(store): pass
name = f"tau2-{domain}"
prefix = "tau2-"
class Catalog:
    tau2: bool = False
if self.catalog.native: pass
base, tau2 = baseline_of(runs), all_tau2(store, runs)
'''
    found = leaks(code, flag_names(), TAU2)
    assert [f.partition(": ")[2] for f in found] == [
        "import tau2", "import tau2.data_model.message", "name Tau2Call", "import testbed.scenarios.tau2.user_faults",
        "import testbed.analysis.tau2", "flag catalog.tau2", "name TAU2_COLUMNS", "name tau2_columns", "string 'tau2-'",
        "string 'tau2-'", "flag field Catalog.tau2", "name tau2", "flag self.catalog.native", "name tau2"]


def test_the_scanner_ignores_prose_methods_and_other_words():
    code = '''
"""τ² runs have faults: `tau2-<domain>`, testbed.scenarios.tau2, TAU2_COLUMNS."""
import taurus
from testbed.scenarios.base import stable_hash
from testbed.specs.registries import kind_views
views = kind_views(run.kind)
lines = transcript.dialogue()
tau = "tau"
tautology = "tau2"
'''
    assert leaks(code, flag_names(), TAU2) == []


def test_a_kinds_own_modules_are_read_off_the_registries():
    assert packaged_kinds() == {"tau2": {"scenarios/tau2/", "analysis/tau2/", "specs/tau2.py"}}


def test_no_module_outside_a_kind_names_it():
    assert scan() == {}
