"""The run id says what the experiment is, not where its servers live: a run whose server moved resumes, and a run
made under the old id (which hashed the server's URL too) is still found and resumed by the same spec."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import yaml

from fault_server import FaultServer, ok
from fault_specs import episodes, write_probe
from helpers import run_cli, run_id_of
from testbed.specs.loader import load_scenario


def _run(spec, store):
    done = run_cli("run", str(spec), "--store", str(store), "-q", "--no-report", "--no-judge", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _move(spec, base_url: str, **agent) -> None:
    """Point the probe's agent at another server (and change how it is reached), nothing else."""
    path = spec.parent / "fault-agent.yaml"
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "base_url": base_url, **agent}, sort_keys=False))


def test_a_run_whose_server_moved_to_another_port_resumes_without_a_request(tmp_path, monkeypatch):
    monkeypatch.setenv("MOVED_KEY", "key-of-the-moved-server")
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why is that?")) as first:
        spec = write_probe(tmp_path, first.base_url, items=2, temperatures=(0.0,))
        made = run_id_of(_run(spec, store).stdout)
    with FaultServer(lambda r: ok("Why is that?")) as moved:
        assert moved.base_url != first.base_url
        _move(spec, moved.base_url, api_key_env="MOVED_KEY", concurrency=7, timeout_s=3, max_retries=2)
        again = _run(spec, store)
        requests = moved.chat_count()
    assert run_id_of(again.stdout) == made
    assert "2 already finished" in again.stdout
    assert requests == 0, "nothing finished is asked again"
    with sqlite3.connect(store) as conn:
        assert [r[0] for r in conn.execute("SELECT run_id FROM runs")] == [made]


def test_what_the_experiment_is_still_changes_the_run_id(tmp_path):
    spec = write_probe(tmp_path, "http://127.0.0.1:9/v1", items=2)
    base = load_scenario(spec).fingerprint()
    for change in ({"model": "another-model"}, {"sampling": {"temperature": 0.3, "seed": 7}},
                   {"server": {"max_model_len": 4096}}):
        _move(spec, "http://127.0.0.1:9/v1", **change)
        assert load_scenario(spec).fingerprint() != base, change
        _move(spec, "http://127.0.0.1:9/v1", model="fault-model", sampling={}, server={})
    _move(spec, "http://127.0.0.1:19/v1", server={"port": 8123, "startup_timeout_s": 30})
    assert load_scenario(spec).fingerprint() == base


def _hash_before_issue_36(scenario) -> str:
    """The spec hash run ids ended in before: the whole resolved spec but file paths, where servers live included."""
    blob = scenario.as_dict()
    for key in ("assistant", "user"):
        blob[key] = {k: v for k, v in blob[key].items() if k != "path"}
    blob.pop("path")
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:10]


def _old_run(spec, store, run_id: str | None = None) -> str:
    """Make a run as the testbed made it before issue 36: its id, fingerprint and episode ids hash the server's URL
    too. Returns the run id."""
    import asyncio

    from testbed.running.runner import run_scenario
    from testbed.store import Store

    scenario = load_scenario(spec)
    run_id = run_id or f"{scenario.spec.name}-{_hash_before_issue_36(scenario)}"
    db = Store(store)
    asyncio.run(run_scenario(scenario.with_legacy_ids(), db, run_id=run_id, show_progress=False))
    db.close()
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE runs SET fingerprint=?, status='interrupted'", (_hash_before_issue_36(scenario),))
    return run_id


def test_a_run_made_under_the_old_run_id_is_resumed_by_the_same_spec(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why is that?")) as server:
        spec = write_probe(tmp_path, server.base_url, items=3, temperatures=(0.0,))
        old_id = _old_run(spec, store)
        with sqlite3.connect(store) as conn:
            dropped = conn.execute("SELECT episode_id FROM episodes ORDER BY episode_id LIMIT 1").fetchone()[0]
            conn.execute("DELETE FROM messages WHERE episode_id=?", (dropped,))
            conn.execute("DELETE FROM episodes WHERE episode_id=?", (dropped,))
        kept = episodes(store)
        made_requests = server.chat_count()
        again = _run(spec, store)
        requests = server.chat_count() - made_requests
    scenario = load_scenario(spec)
    assert old_id != f"{scenario.spec.name}-{scenario.fingerprint()}", "the id moved: the old run must be found under its old id"
    assert run_id_of(again.stdout) == old_id
    assert "2 already finished" in again.stdout and "3/3 episodes done" in again.stdout
    after = episodes(store)
    assert set(after) == set(kept) | {dropped} and all(after[e] == v for e, v in kept.items())
    assert requests == 1, "only the dropped episode's user turn (its item's answer is shared and kept)"
    with sqlite3.connect(store) as conn:
        assert [r[0] for r in conn.execute("SELECT run_id FROM runs")] == [old_id]


def test_an_old_run_named_with_run_id_resumes_though_its_fingerprint_is_the_old_one(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why is that?")) as server:
        spec = write_probe(tmp_path, server.base_url, items=1, temperatures=(0.0,))
        _old_run(spec, store, "my-old-run")
        made_requests = server.chat_count()
        again = run_cli("run", str(spec), "--store", str(store), "-q", "--no-report", "--no-judge", "--run-id", "my-old-run",
                        timeout=120)
        requests = server.chat_count() - made_requests
    assert again.returncode == 0, again.stdout + again.stderr
    assert "different spec" not in again.stdout + again.stderr
    assert "1/1 episodes done" in again.stdout and "1 already finished" in again.stdout and requests == 0
