"""The docs a newcomer walks stay true: a short README, a site whose nav holds every page, and reference pages that
name every benchmark script, every store table and only commands that exist.

The site itself is built with `mkdocs build --strict` by scripts/test.sh (a broken link fails there); these checks
read the files only, so they stay fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer.main
import yaml

from testbed.cli import app
from testbed.store.schema import TABLES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_LIMIT = 200
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(?:^|[\s;&|(])(?:\.venv/bin/)?testbed ([a-z][\w-]*)")
COMMENT = re.compile(r"\s#\s.*$")
REPO_PATH = re.compile(r"`((?:testbed|tests|benchmarks|scripts|scenarios|agents|judges|sweeps|examples|docs)/[\w./-]*)`")
"""A file or folder of the repository named in code, as the docs name source files (no braces or placeholders)."""
BUILT_ONLY = {"testbed/_builtin"}
"""Paths that exist only in the built wheel."""


def nav_pages(nav: list) -> list[str]:
    """Every page file the nav names, depth first."""
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def command_words(markdown: str) -> set[str]:
    """The word after `testbed ` wherever the text shows a command: lines of fenced blocks (comments dropped) and
    inline code spans."""
    words = set()
    for block in FENCE.findall(markdown):
        for line in block.splitlines()[1:-1]:
            words.update(COMMAND.findall(COMMENT.sub("", line)))
    for span in INLINE_CODE.findall(FENCE.sub("", markdown)):
        words.update(COMMAND.findall(span))
    return words


def documents() -> dict[str, str]:
    """The README and every docs page, by path relative to the repository root."""
    paths = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines < README_LIMIT, f"README.md has {lines} lines; move detail into docs/ and keep it under {README_LIMIT}"


def test_the_nav_and_the_docs_folder_hold_the_same_pages():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = nav_pages(config["nav"])
    missing = [p for p in pages if not (DOCS / p).is_file()]
    left_out = sorted(p.name for p in DOCS.glob("*.md") if p.name not in pages)
    assert not missing, f"mkdocs.yml's nav names pages docs/ lacks: {missing}"
    assert not left_out, f"docs/ pages missing from mkdocs.yml's nav: {left_out}"
    assert len(pages) == len(set(pages)), "a page appears twice in the nav"


def test_every_benchmark_script_is_on_the_benchmarks_page():
    page = (DOCS / "benchmarks.md").read_text()
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    assert scripts
    unnamed = [s for s in scripts if f"benchmarks/{s}" not in page]
    assert not unnamed, f"docs/benchmarks.md names no `benchmarks/<script>` for: {unnamed}"


def test_every_store_table_has_its_section_on_the_store_page():
    page = (DOCS / "store.md").read_text()
    sections = set(re.findall(r"^## `(\w+)`", page, re.M))
    assert not TABLES - sections, f"docs/store.md has no `## `<table>`` section for: {sorted(TABLES - sections)}"
    assert not sections - TABLES, f"docs/store.md describes tables the schema lacks: {sorted(sections - TABLES)}"


def test_every_repository_path_the_docs_name_exists():
    missing = {}
    for path, text in documents().items():
        named = {p.rstrip("/") for p in REPO_PATH.findall(text)} - BUILT_ONLY
        if gone := sorted(p for p in named if not (ROOT / p).exists()):
            missing[path] = gone
    assert not missing, f"the docs name files that do not exist (moved or renamed?): {missing}"


def test_the_checker_reads_commands_from_blocks_and_spans_only():
    text = "the testbed starts\n```bash\n.venv/bin/testbed run x   # then testbed nothing\ntestbed plot R && testbed report R\n```\n" \
           "see `testbed judge RUN` and `PYTHONPATH=e testbed export RUN`"
    assert command_words(text) == {"run", "plot", "report", "judge", "export"}


def test_every_testbed_command_in_the_docs_exists():
    commands = set(typer.main.get_command(app).commands)
    unknown = {path: sorted(command_words(text) - commands) for path, text in documents().items()}
    unknown = {path: words for path, words in unknown.items() if words}
    assert not unknown, f"the docs name `testbed` commands that do not exist: {unknown} (known: {sorted(commands)})"
