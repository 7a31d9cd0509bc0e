"""No code branches on a scenario kind, backend, judge kind, framework or dataset by name: they are looked up
in the registries.

A branch on a name (`kind == "probe"`, `backend in ("vllm", ...)`, `framework != "native"`,
`isinstance(spec, ProbeScenarioSpec)`, a dict keyed by the names, a tuple listing several of them) is
knowledge of the set living outside its declaration, which a new entry silently falls through. The
registrations and the modules declaring entries may know names; so may each dataset's own module
(`testbed/datasets/gsm8k.py` declares and scores GSM8K).
"""

from __future__ import annotations

import ast
from pathlib import Path

from testbed.datasets import DATASETS
from testbed.specs.registries import BACKENDS, FRAMEWORKS, JUDGE_KINDS, KINDS

PACKAGE = Path(__file__).resolve().parents[2] / "testbed"
DATASET_MODULES = {"datasets/catalog.py", "datasets/gsm8k.py", "datasets/instructions.py", "datasets/gpqa.py",
                   "datasets/healthbench.py"}
"""The dataset registrations and the modules that declare each dataset's entry."""
ALLOWED = {"registry.py", "specs/registries.py", "entries.py", "scenarios/probe.py", "scenarios/dialogue.py",
           "scenarios/info_gathering.py", "frameworks/catalogue.py", *DATASET_MODULES}
"""The registrations and the modules declaring entries: the only places that may name a kind, framework or dataset."""
KNOWN_LEFTOVERS: set[tuple[str, str]] = set()
"""Branches left for their module's owner (none now: a leftover listed here must still be there)."""
SPEC_CLASSES = {"ProbeScenarioSpec", "DialogueScenarioSpec", "InfoGatheringScenarioSpec"}
SUBJECTS = {"kind", "backend", "dataset", "framework"}
REGISTRIES = (KINDS, BACKENDS, JUDGE_KINDS, FRAMEWORKS, DATASETS)


def _names() -> set[str]:
    return set().union(*(r.names() for r in REGISTRIES))


def _subject(node: ast.AST) -> str | None:
    """`kind`, `backend` or `dataset` when the expression reads one (`kind`, `spec.kind`, `meta["kind"]`, `kind[0]`)."""
    if isinstance(node, ast.Name):
        return node.id if node.id in SUBJECTS else None
    if isinstance(node, ast.Attribute):
        return node.attr if node.attr in SUBJECTS else None
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and key.value in SUBJECTS:
            return key.value
        return _subject(node.value)
    return None


def _strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_strings(e) for e in node.elts)) if node.elts else set()
    return set()


def _mentions_spec_class(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in SPEC_CLASSES or isinstance(n, ast.Attribute) and n.attr in SPEC_CLASSES
               for n in ast.walk(node))


def branches(source: str, names: set[str]) -> list[str]:
    """The name branches in one module's source, each as `line: code`."""
    found = []
    tree = ast.parse(source)
    compared = {id(side) for node in ast.walk(tree) if isinstance(node, ast.Compare) for side in (node.left, *node.comparators)}
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            hit = any(_subject(s) for s in sides) and any(_strings(s) & names for s in sides)
        elif isinstance(node, ast.Match):
            hit = _subject(node.subject) is not None and any(
                _strings(getattr(p, "value", ast.Constant(None))) & names for c in node.cases for p in ast.walk(c.pattern))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            hit = len(node.args) == 2 and _mentions_spec_class(node.args[1])
        elif isinstance(node, ast.Dict):
            for registry in REGISTRIES:
                hit = hit or len(set().union(*(_strings(k) for k in node.keys if k is not None)) & set(registry.names())) >= 2
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and id(node) not in compared:
            listed = _strings(node)
            hit = len(listed) >= 2 and len(listed) == len(node.elts) and any(listed <= set(r.names()) for r in REGISTRIES)
        if hit:
            found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def scan(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Branches per module under `root` (relative path → findings), the allowed modules skipped."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED or "_builtin" in path.parts:
            continue
        found = [f for f in branches(path.read_text(), _names())
                 if (rel, f.partition(": ")[2].replace('"', "'")) not in KNOWN_LEFTOVERS]
        if found:
            out[rel] = found
    return out


def test_the_scanner_finds_each_kind_of_branch():
    code = '''
if spec.kind == "probe": pass
if kind[0] != "probe": pass
if meta["kind"] == "dialogue": pass
if spec.backend in ("vllm", "scripted"): pass
if self.backend == "openai": pass
if judge.spec.kind == "local": pass
x = "tasks" if kind == "info_gathering" else "items"
if isinstance(spec, DialogueScenarioSpec) and spec.opening == "persona": pass
KINDS = {"probe": A, "dialogue": B}
match backend:
    case "litellm": pass
if item.dataset == "gsm8k": pass
if dataset in ("ifeval", "ifbench"): pass
LICENCES = {"gsm8k": "MIT", "gpqa_diamond": "CC-BY-4.0"}
match row["dataset"]:
    case "healthbench": pass
if framework != "native": pass
if context.framework in ("autogen", "camel"): pass
ALL_FRAMEWORKS = ("native", "autogen", "langgraph")
SWEEPABLE = ["probe", "dialogue"]
'''
    assert len(branches(code, _names())) == 18


def test_the_scanner_ignores_other_comparisons():
    code = '''
if kind == "extra_forbidden": pass
if spec.opening == "persona": pass
if entry.name == name: pass
if isinstance(spec, Strict): pass
caps = {"continue_user_turn": True, "structured_output": True}
if kind not in KINDS: pass
if spec.opening == "dataset": pass
if item.dataset not in DATASETS: pass
if framework not in FRAMEWORKS: pass
ONE = ("native",)
PACKAGES = ("vllm", "openai", "torch")
'''
    assert branches(code, _names()) == []


def test_no_branch_on_registered_names_outside_the_entries():
    assert scan() == {}


def test_the_known_leftovers_are_still_there():
    """When a leftover is removed, its allowance goes too, so it cannot come back unnoticed."""
    for rel, code in KNOWN_LEFTOVERS:
        found = [f.partition(": ")[2].replace('"', "'") for f in branches((PACKAGE / rel).read_text(), _names())]
        assert code in found, f"{rel} no longer has `{code}`: remove it from KNOWN_LEFTOVERS"
