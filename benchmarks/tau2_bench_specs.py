"""τ² scenario specs the model benchmarks write for themselves: an assistant and a user (agent spec files), a
domain, its tasks, trials and temperatures, in a folder of their own, so a benchmark needs no spec of its own in
the repository and a command line names everything that varies.

An agent's sampling temperature can be overridden (`temperature`): the agent spec is copied beside the scenario with
that one field changed, its name kept, so the run's rows still name the model.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from testbed.specs.loader import ResolvedScenario, load_scenario

REPO = Path(__file__).resolve().parents[1]
USER_PROMPT = REPO / "scenarios" / "prompts" / "user-tau2.md"


def agent_copy(folder: Path, spec: Path, temperature: float | None, role: str) -> Path:
    """The agent spec as given, or a copy in `folder` with its sampling temperature set (for `role`'s side)."""
    if temperature is None:
        return spec.resolve()
    data = yaml.safe_load(spec.read_text())
    data.setdefault("sampling", {})["temperature"] = temperature
    out = folder / f"{role}-{spec.stem}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def write_tau2_scenario(folder: Path, name: str, *, assistant: Path, user: Path, domain: str = "mock",
                        task_ids: list[str] | None = None, limit: int | None = None, trials: int = 1,
                        assistant_temperature: float | None = None, user_temperature: float = 0.0,
                        user_modes: tuple[str, ...] = ("instructed",), max_tokens: int = 192,
                        max_steps: int = 30) -> ResolvedScenario:
    """A τ² scenario in `folder` (created) with the given sides and grid, resolved as `testbed run` resolves it."""
    folder.mkdir(parents=True, exist_ok=True)
    tasks: dict = {"ids": task_ids} if task_ids else {}
    if limit:
        tasks["limit"] = limit
    scenario = {"kind": "tau2", "name": name, "domain": domain, "trials": trials,
                "assistant": str(agent_copy(folder, assistant, assistant_temperature, "assistant")),
                "user": str(user.resolve()), "user_modes": list(user_modes), "user_prompt_file": str(USER_PROMPT),
                "temperatures": [user_temperature], "max_tokens": max_tokens, "max_steps": max_steps}
    if tasks:
        scenario["tasks"] = tasks
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True))
    return load_scenario(path)
