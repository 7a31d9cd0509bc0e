"""How a comparison reads the store: every call made while `run_comparison` reads a finished comparison, traced.

Builds a small comparison store first (dialogue-gsm8k on the mock OpenAI server, `native` and `langgraph`,
no model and no network), then traces, with `sys.setprofile`, a second `run_comparison` of the same
scenario: every run is finished and judged, so it only resumes (nothing to do) and reads the comparison.
It counts, over the whole call and over `comparison_of` (the reading of the finished comparison) alone:

- store calls: calls that receive the `Store` object as an argument (its own methods, `self`, left out),
  the distinct functions and the distinct files they are in;
- store reads: SQL statements the store's connection ran (sqlite's trace callback), and per run the
  statements that read each table (`episodes`, `messages`, `labels`, ...);
- returns up: following the store through its calls in the order they are made, how often the next call that
  receives it is in a higher layer than the one before (the store went down to a reader and comes back up to a
  layer that passes it on again): the count the issue gives for `run_comparison`;
- upward calls: calls whose callee's layer is above its caller's (the nearest testbed frame up the stack),
  as events and as distinct (caller → callee) edges.

Layers, low to high (a module's layer is its package under `testbed.`; `analysis.<sub>` counts as analysis;
top-level modules are core; the original layout's `testbed.comparison`, `runner`, `sweep_runner` count as
running and `orchestrator`, `participants` as loop, so both layouts count alike):

    core < specs < backends < store < wire < loop < judges < frameworks < scenarios < analysis < export < replay
    < running < entries < cli < api (testbed/__init__)

The order follows the package import graph (a package imports only packages below it), so a call up the
order is a call back into a layer the caller's package does not import: a callback or a registry's lazy entry.

    python benchmarks/store_trace.py                      # this checkout
    python benchmarks/store_trace.py --code /tmp/orig     # another checkout of the project, first on sys.path
    python benchmarks/store_trace.py --detail             # also list the upward edges and the store calls' files
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent

LAYERS = ["core", "specs", "backends", "store", "wire", "loop", "judges", "frameworks", "scenarios", "analysis", "export",
          "replay", "running", "entries", "cli", "api"]
"""The layers, low to high."""

RENAMED = {"comparison": "running", "runner": "running", "sweep_runner": "running", "orchestrator": "loop",
           "participants": "loop", "control_tokens": "backends", "entries": "entries"}
"""Top-level modules (of either layout) that belong to a layer other than core."""

CO_RESUMABLE = 0x20 | 0x80 | 0x200
"""Generator, coroutine and async generator code: a `call` event on these is also a resumption."""


def layer_of(module: str) -> str | None:
    """The layer of a testbed module, None outside testbed."""
    parts = module.split(".")
    if parts[0] != "testbed":
        return None
    if len(parts) == 1:
        return "api"
    head = parts[1]
    if head in LAYERS:
        return head
    return RENAMED.get(head, "core")


def dialogue_spec(folder: Path, base_url: str, repo: Path, items: int) -> Path:
    """dialogue-gsm8k on the mock server: `items` items, 3 user turns, the instructed user mode."""
    import yaml

    def write(path: Path, data: dict) -> Path:
        path.write_text(yaml.safe_dump(data))
        return path

    write(folder / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": base_url})
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user-dialogue.md").write_text((repo / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    data = yaml.safe_load((repo / "scenarios" / "dialogue-gsm8k.yaml").read_text())
    data.update(assistant="mock.yaml", user="mock.yaml", items={"limit": items}, max_user_turns=3, user_modes=["instructed"])
    return write(folder / "dialogue.yaml", data)


class Tracer:
    """The profile hook: counts store calls, upward calls, and which of them fall inside `comparison_of`."""

    def __init__(self, store):
        self.store = store
        self.seen_resumable: set = set()
        self.inside: list = []
        self.parts = {"whole": _Counts(), "comparison_of": _Counts()}

    def __call__(self, frame, event, arg):
        if event == "return" and self.inside and frame is self.inside[-1]:
            self.inside.pop()
            return
        if event != "call":
            return
        code = frame.f_code
        if code.co_flags & CO_RESUMABLE:
            if frame in self.seen_resumable:
                return
            self.seen_resumable.add(frame)
        module = frame.f_globals.get("__name__", "")
        callee = layer_of(module)
        if callee is None or code.co_name == "<module>":
            return
        if code.co_name == "comparison_of" and callee == "running":
            self.inside.append(frame)
        caller_frame = frame.f_back
        while caller_frame is not None and layer_of(caller_frame.f_globals.get("__name__", "")) is None:
            caller_frame = caller_frame.f_back
        where = f"{module}.{code.co_qualname}"
        takes_store = self._takes_store(frame, code)
        up = None
        if caller_frame is not None:
            caller = layer_of(caller_frame.f_globals["__name__"])
            if LAYERS.index(callee) > LAYERS.index(caller):
                up = (f"{caller_frame.f_globals['__name__']}.{caller_frame.f_code.co_qualname}", where)
        for name, counts in self.parts.items():
            if name == "comparison_of" and not self.inside:
                continue
            if takes_store:
                counts.store_calls[where] += 1
                counts.store_files.add(code.co_filename)
                if counts.chain and LAYERS.index(callee) > LAYERS.index(counts.chain[-1][0]):
                    counts.returns_up[(counts.chain[-1][1], where)] += 1
                counts.chain.append((callee, where))
            if up is not None:
                counts.upward[up] += 1

    def _takes_store(self, frame, code) -> bool:
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        return any(frame.f_locals.get(n) is self.store for n in names if n != "self")


class _Counts:
    def __init__(self):
        self.store_calls: Counter = Counter()
        self.store_files: set = set()
        self.upward: Counter = Counter()
        self.chain: list[tuple[str, str]] = []
        self.returns_up: Counter = Counter()


def table_reads(statements: list[str], run_ids: dict[str, str]) -> dict[str, dict[str, int]]:
    """Per framework: how many SELECT statements naming its run read each table (the first table after FROM)."""
    out: dict[str, dict[str, int]] = {}
    for framework, run_id in run_ids.items():
        tables: Counter = Counter()
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT") and f"'{run_id}'" in sql:
                found = re.search(r"\bFROM\s+(\w+)", sql, re.IGNORECASE)
                tables[found.group(1) if found else "?"] += 1
        out[framework] = dict(sorted(tables.items()))
    return out


async def measure(items: int, frameworks: list[str], repo: Path) -> dict:
    """Build the comparison store, then trace its resumed comparison; the counts as a dict."""
    from mock_openai import MockOpenAI

    comparison = _import("testbed.running.comparison", "testbed.comparison")
    from testbed.store import Store

    folder = Path(tempfile.mkdtemp(prefix="store-trace-"))
    store = Store(folder / "store.sqlite")
    async with MockOpenAI(reply_words=6) as mock:
        scenario, _ = comparison.load_comparable(dialogue_spec(folder, mock.base_url, repo, items), frameworks)
        first = await comparison.run_comparison(scenario, store, frameworks, show_progress=False)
        tracer = Tracer(store)
        statements: list[tuple[str, bool]] = []
        store.conn.set_trace_callback(lambda sql: statements.append((sql, bool(tracer.inside))))
        sys.setprofile(tracer)
        threading.setprofile(tracer)
        try:
            again = await comparison.run_comparison(scenario, store, frameworks, show_progress=False)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
            store.conn.set_trace_callback(None)
    assert again.run_ids == first.run_ids
    frame = again.frame.drop(columns=[c for c in ("wall_s", "client_cpu_ms_per_turn") if c in again.frame])
    return {"tracer": tracer, "statements": statements, "run_ids": again.run_ids, "frame": frame}


def _import(*names: str):
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"none of {', '.join(names)}")


def summary(result: dict, detail: bool) -> dict:
    """The counts of the whole resumed comparison and of `comparison_of`, as printed."""
    tracer, out = result["tracer"], {}
    for name, counts in tracer.parts.items():
        statements = [sql for sql, inside in result["statements"] if inside or name == "whole"]
        part = {
            "sql_statements": len(statements),
            "sql_selects": sum(s.lstrip().upper().startswith("SELECT") for s in statements),
            "selects_per_run_and_table": table_reads(statements, result["run_ids"]),
            "returns_up": sum(counts.returns_up.values()),
            "store_call_events": sum(counts.store_calls.values()),
            "store_call_functions": len(counts.store_calls),
            "store_call_files": len(counts.store_files),
            "upward_events": sum(counts.upward.values()),
            "upward_edges": len(counts.upward),
        }
        if detail:
            part["returns_up_at"] = [f"{a} -> {b} ×{n}" for (a, b), n in sorted(counts.returns_up.items())]
            part["upward"] = [f"{a} -> {b} ×{n}" for (a, b), n in sorted(counts.upward.items())]
            part["store_functions"] = [f"{f} ×{n}" for f, n in sorted(counts.store_calls.items())]
            part["store_files"] = sorted(os.path.relpath(f, result["repo"]) for f in counts.store_files)
        out[name] = part
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=HERE.parent, help="checkout of the project to trace (default: this one)")
    parser.add_argument("--items", type=int, default=2, help="dataset items in the comparison (default 2)")
    parser.add_argument("--frameworks", default="native,langgraph", help="comma-separated (default native,langgraph)")
    parser.add_argument("--detail", action="store_true", help="list the upward edges, store functions and files")
    parser.add_argument("--frame", action="store_true", help="print the comparison's frame too (to check both codes agree)")
    args = parser.parse_args()
    repo = args.code.resolve()
    sys.path.insert(0, str(repo))
    sys.path.insert(1, str(HERE))
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.chdir(tempfile.mkdtemp(prefix="store-trace-cwd-"))
    result = asyncio.run(measure(args.items, args.frameworks.split(","), repo))
    result["repo"] = repo
    import testbed

    out = {"code": str(repo), "testbed": str(Path(testbed.__file__).parent), **summary(result, args.detail)}
    print(json.dumps(out, indent=1, ensure_ascii=False))
    if args.frame:
        print(result["frame"].to_json(orient="records", indent=1))


if __name__ == "__main__":
    main()
