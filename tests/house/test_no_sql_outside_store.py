"""All SQL lives in testbed/store/: no other module runs a query, touches the connection or spells SQL.

So the tables can change (a column, an index, a new table) by editing one package, and every
reader outside it goes through the store's typed readers and frames.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from imports import PACKAGE

STORE = PACKAGE / "store"
QUERY_CALLS = {"execute", "executemany", "executescript", "read_sql", "read_sql_query", "read_sql_table"}
"""Methods that run SQL: sqlite3's cursor and connection methods, and pandas' SQL readers."""
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE FROM|CREATE TABLE|CREATE INDEX|DROP TABLE|ALTER TABLE|PRAGMA) ")
"""SQL keywords as written in a query (upper case, followed by a space), so prose does not match."""


def sql_findings(source: str, where: str = "<source>") -> list[str]:
    """`where:line: what` for each query call, connection use (`.conn`) and SQL string literal in the source."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in QUERY_CALLS:
            found.append((node.lineno, f"calls .{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr == "conn":
            found.append((node.lineno, "uses the store's connection (.conn)"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (match := SQL.search(node.value)):
            found.append((node.lineno, f"SQL in a string: {match.group(0).strip()}"))
    return [f"{where}:{line}: {what}" for line, what in sorted(found)]


def sql_outside_store(package: Path = PACKAGE) -> list[str]:
    """Every finding in the modules of `package` that are not under its store/ folder."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if (package / "store") in path.parents:
            continue
        found += sql_findings(path.read_text(), str(path.relative_to(package.parent)))
    return found


def test_the_checker_finds_queries_connections_and_sql_strings():
    source = '''
rows = store.conn.execute("SELECT kind FROM runs WHERE run_id=?", (run_id,))
frame = pd.read_sql_query(f"SELECT * FROM episodes WHERE run_id={run_id!r}", con)
cur.executemany("INSERT INTO labels VALUES (?)", rows)
'''
    found = sql_findings(source)
    assert any(".conn" in f for f in found) and any(".execute" in f for f in found)
    assert any(".read_sql_query" in f for f in found) and any(".executemany" in f for f in found)
    assert sum("SQL in a string" in f for f in found) == 3


def test_the_checker_leaves_prose_and_other_calls_alone():
    source = '''
"""Select the episodes, then update the report; a connection is opened by the store."""
await _execute(scenario, store)
SUMMARY = "select * from nothing: lower-case prose"
'''
    assert sql_findings(source) == []


def test_no_sql_outside_the_store():
    found = sql_outside_store()
    assert found == [], "SQL outside testbed/store/ (add a reader there instead):\n" + "\n".join(found)


def test_the_store_imports_no_package_above_it():
    from imports import import_graph

    above = ("testbed.judges", "testbed.analysis", "testbed.scenarios", "testbed.cli", "testbed.running.runner")
    found = {m: sorted(d for d in deps if d.startswith(above)) for m, deps in import_graph().items() if m.startswith("testbed.store")}
    assert {m: d for m, d in found.items() if d} == {}, "the store is the bottom of the house: judges and reports import it, never the reverse"
