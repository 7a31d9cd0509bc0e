"""What the examples share: their command-line options and the agent spec they run on."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import yaml


def options(doc: str, *, limit: int = 3, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    """The options every example takes (where the store and outputs go, a running server, how many items), and its own `extra` ones."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("examples-out/store.sqlite"), help="SQLite store (created if missing)")
    parser.add_argument("--out", type=Path, default=Path("examples-out"), help="folder for files the example writes")
    parser.add_argument("--base-url", help="a vLLM server already serving smollm2-135m-instruct (default: the testbed starts one)")
    parser.add_argument("--limit", type=int, default=limit, help="dataset items")
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    return args


def agent(args: argparse.Namespace) -> str:
    """The built-in `smollm2` agent (the testbed starts and stops its vLLM server), or one that reuses `--base-url`."""
    if not args.base_url:
        return "smollm2"
    path = args.out / "served-agent.yaml"
    path.write_text(yaml.safe_dump({
        "name": "smollm2-135m", "backend": "vllm", "model": "smollm2-135m-instruct", "base_url": args.base_url,
        "sampling": {"temperature": 0.0, "max_tokens": 96}, "concurrency": 16,
    }))
    return str(path)
