"""What the reply-bound, redirect and wire-bound tests share: a dialogue run against an HTTP agent, its episodes'
errors, and the process's peak memory over a block."""

from __future__ import annotations

import threading

import psutil

from helpers import REPO, write_yaml
from testbed.specs.loader import load_scenario


def dialogue(tmp_path, url: str, items: int = 2, **agent):
    """A dialogue scenario of `items` episodes whose assistant is the HTTP agent at `url` (spec fields `agent` added)."""
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    write_yaml(tmp_path / "remote.yaml", {"name": "remote", "backend": "http-agent", "url": url, "max_retries": 2, **agent})
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    return load_scenario(write_yaml(tmp_path / "dlg.yaml", {
        "kind": "dialogue", "name": "dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": items},
        "assistant": "remote.yaml", "user": "scripted.yaml", "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md",
        "temperatures": [0.7], "max_tokens": 16, "max_user_turns": 2, "end_marker": "[[END]]"}))


def errors(store, run_id: str) -> list[str]:
    """The error reasons of the run's errored episodes."""
    return [e.error_reason for e in store.episodes(run_id) if e.status == "error"]


class PeakRSS:
    """The process's resident memory sampled every few milliseconds in a thread: how far it grew over a block."""

    def __enter__(self) -> "PeakRSS":
        self._process, self._stop = psutil.Process(), threading.Event()
        self.before = self.peak = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.before) / 1e6
