"""A sweep's run id, like a scenario's, leaves out where its servers live, and a sweep run made under its old id
(before issue 36) is still found, with the episode ids it was made with."""

from __future__ import annotations

from helpers import REPO, write_yaml
from testbed.running.runner import plan
from testbed.specs.sweep import load_sweep
from testbed.store import Store
from testbed.running.sweep_runner import sweep_run_id


def _sweep(folder, **agent):
    (folder / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
    for name in ("alpha", "beta"):
        write_yaml(folder / f"{name}.yaml", {"name": name, "backend": "openai", "model": f"{name}-model",
                                             "base_url": "http://127.0.0.1:8000/v1", **agent})
    return load_sweep(write_yaml(folder / "sweep.yaml", {
        "kind": "sweep", "name": "sw", "agents": ["alpha.yaml", "beta.yaml"], "datasets": ["gsm8k"], "items": {"limit": 1},
        "user_modes": ["instructed"], "user_prompt_file": "user.md", "temperatures": [0.0]}))


def _ids(sweep) -> list[str]:
    return [v.key.episode_id for cell in sweep.cells for _, variants in plan(cell) for v in variants]


def test_moving_a_sweeps_servers_keeps_its_run_id_and_episode_ids(tmp_path):
    here = _sweep(tmp_path)
    moved = _sweep(tmp_path, base_url="http://10.0.0.7:9000/v1", concurrency=64, timeout_s=30, api_key_env="OTHER_KEY")
    assert sweep_run_id(moved) == sweep_run_id(here)
    assert _ids(moved) == _ids(here)
    assert sweep_run_id(_sweep(tmp_path, sampling={"temperature": 0.5})) != sweep_run_id(here)


def test_a_sweep_run_under_its_old_id_is_resumed_with_its_old_episode_ids(tmp_path):
    sweep = _sweep(tmp_path)
    old_id = f"sw-{sweep.legacy_fingerprint()}"
    store = Store(tmp_path / "s.sqlite")
    try:
        assert sweep_run_id(sweep, store) == sweep_run_id(sweep) != old_id
        store.begin_run(old_id, scenario="sw", kind="probe", spec=sweep.as_dict(), fingerprint=sweep.legacy_fingerprint(),
                        versions={}, git_revision=None, planned=1)
        assert sweep_run_id(sweep, store) == old_id
        old = sweep.as_made_under(store.run_fingerprint(old_id))
        assert _ids(old) != _ids(sweep), "a run made before hashed the servers' URLs into its episode ids too"
        assert _ids(old) == [v.key.episode_id for cell in sweep.cells for _, vs in plan(cell.with_legacy_ids()) for v in vs]
    finally:
        store.close()
