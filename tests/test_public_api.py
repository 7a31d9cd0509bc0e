"""The Python API a notebook uses: load, run, open the store, read frames — all from `import testbed`."""

from __future__ import annotations

import subprocess
import sys

import testbed


def test_a_scenario_runs_and_reads_back_through_the_top_level_api(spec_dir, tmp_path):
    path = tmp_path / "api.sqlite"
    scenario = testbed.load_scenario(spec_dir(items={"limit": 2}))
    summary = testbed.run(scenario, store=path)
    assert (summary.planned, summary.done, summary.status) == (8, 8, "done")
    store = testbed.open_store(path, readonly=True)
    episodes = testbed.episodes_df(store, summary.run_id)
    turns = testbed.turns_df(store, summary.run_id)
    messages = testbed.messages_df(store, summary.run_id)
    assert len(episodes) == 8 and set(episodes.status) == {"done"}
    assert len(turns) == 8 and {"question", "answer", "user_turn", "user_mode", "temperature"} <= set(turns.columns)
    assert int(messages.generated_user_turn.sum()) == 8
    assert testbed.labels_df(store, summary.run_id).empty


def test_a_rerun_through_the_api_resumes(spec_dir, tmp_path):
    path = tmp_path / "api.sqlite"
    spec = spec_dir(items={"limit": 1})
    first = testbed.run(spec, store=path)
    again = testbed.run(spec, store=path)
    assert again.run_id == first.run_id and again.skipped == again.planned == 4


def test_importing_testbed_loads_nothing_heavy():
    """Only the registrations (names and import paths, testbed/entries.py) and the registries they fill load with the package."""
    code = ("import sys, testbed; print(sorted(m for m in sys.modules "
            "if m.startswith(('testbed.', 'pandas', 'aiohttp', 'pydantic', 'httpx', 'numpy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(["testbed.datasets", "testbed.datasets.catalog", "testbed.datasets.entry", "testbed.datasets.items",
                               "testbed.entries", "testbed.registry", "testbed.specs", "testbed.specs.kind_views",
                               "testbed.specs.registries"])


def test_unknown_names_are_attribute_errors():
    try:
        testbed.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def _type_checking_imports() -> dict[str, str]:
    """Name → `module:attribute` of the imports under `if TYPE_CHECKING:` in testbed/__init__.py."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(testbed.__file__).read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), "only `from module import name` under TYPE_CHECKING"
                found.update({a.asname or a.name: f"{imp.module}:{a.name}" for a in imp.names})
    return found


def test_all_the_lazy_table_and_the_type_checking_imports_name_the_same_api():
    defined_here = {"judge", "open_store", "run"}
    assert len(testbed.__all__) == len(set(testbed.__all__)), "a name listed twice in __all__"
    assert set(testbed.__all__) == set(testbed._API) | defined_here
    assert _type_checking_imports() == testbed._API, "each lazy name is imported under TYPE_CHECKING from the same place"
    assert all(callable(getattr(testbed, name)) for name in defined_here)


def test_every_public_name_resolves_to_its_module_attribute():
    import importlib

    for name, target in testbed._API.items():
        module, _, attr = target.partition(":")
        assert getattr(testbed, name) is getattr(importlib.import_module(module), attr), name
        assert getattr(testbed, name).__doc__, f"{name} has no docstring"


def test_importing_testbed_imports_no_heavy_dependency():
    heavy = ("pandas", "numpy", "aiohttp", "vllm", "torch", "networkx", "matplotlib", "sklearn", "rich", "typer", "pydantic",
             "autogen", "langgraph", "camel")
    code = f"import sys, testbed; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
