"""Spec files that point the testbed at a fault server, and readers of what a run left in the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from helpers import REPO, write_yaml


def write_probe(folder: Path, base_url: str, *, model: str = "fault-model", items: int = 3, temperatures=(0.0, 1.0),
                concurrency: int = 4, api_key_env: str | None = None, name: str = "probe-faults", **scenario) -> Path:
    """A GSM8K probe whose assistant and user are one agent on `base_url` (instructed user, short timeouts)."""
    agent = {"name": "fault-agent", "backend": "vllm", "model": model, "base_url": base_url, "timeout_s": 2,
             "max_retries": 1, "concurrency": concurrency}
    if api_key_env:
        agent["api_key_env"] = api_key_env
    write_yaml(folder / "fault-agent.yaml", agent)
    (folder / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
    spec = {"kind": "probe", "name": name, "dataset": "gsm8k", "items": {"limit": items}, "assistant": "fault-agent.yaml",
            "user": "fault-agent.yaml", "user_modes": ["instructed"], "user_prompt_file": "user.md",
            "temperatures": list(temperatures), "max_tokens": 16, **scenario}
    return write_yaml(folder / f"{name}.yaml", spec)


def episodes(store: Path) -> dict[str, tuple]:
    """episode id → (status, error reason, finished_at) of every stored episode."""
    with sqlite3.connect(store) as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute("SELECT episode_id, status, error_reason, finished_at FROM episodes")}


def is_user_request(text: str) -> bool:
    """The instructed user's request shows the conversation as text; the assistant's is the bare question."""
    return "Now you are the user" in text


def write_dialogue(folder: Path, base_url: str, *, items: int = 3, max_user_turns: int = 2, concurrency: int = 4,
                   api_key_env: str | None = None, max_retries: int = 4, name: str = "dialogue-faults") -> Path:
    """dialogue-gsm8k with an instructed user, both agents one agent on `base_url` (short timeouts)."""
    agent = {"name": "fault-agent", "backend": "vllm", "model": "fault-model", "base_url": base_url, "timeout_s": 2,
             "max_retries": max_retries, "concurrency": concurrency}
    if api_key_env:
        agent["api_key_env"] = api_key_env
    write_yaml(folder / "fault-agent.yaml", agent)
    (folder / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    spec = {"kind": "dialogue", "name": name, "opening": "dataset", "dataset": "gsm8k", "items": {"limit": items},
            "assistant": "fault-agent.yaml", "user": "fault-agent.yaml", "user_modes": ["instructed"], "user_prompt_file": "user.md",
            "temperatures": [0.7], "max_tokens": 16, "max_user_turns": max_user_turns, "end_marker": "[[END]]"}
    return write_yaml(folder / f"{name}.yaml", spec)


def finished_probe(folder: Path, store: Path, items: int = 2) -> str:
    """The run id of a small native probe, run to the end into `store` against a fault server that answers every request."""
    from fault_server import FaultServer, ok
    from helpers import run_cli, run_id_of

    with FaultServer(lambda r: ok("Why is that?")) as server:
        spec = write_probe(folder, server.base_url, items=items, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), "-q", "--no-report", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return run_id_of(run.stdout)
