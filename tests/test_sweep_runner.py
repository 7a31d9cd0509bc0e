"""Sweeps: expansion into cells, one run with stable ids, shared answers, resuming, and the server order."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from typer.testing import CliRunner

from helpers import REPO, write_yaml
from testbed.backends.base import BackendUnavailable
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app as cli
from testbed.running.runner import plan
from testbed.specs.errors import SpecError
from testbed.specs.sweep import find_sweep, load_sweep
from testbed.store import Store
from testbed.running.sweep_runner import AgentServers, run_sweep, sweep_run_id
from synthetic_chats import chats_file  # noqa: F401  (the fixture)


@pytest.fixture
def sweep_dir(tmp_path):
    """Two scripted agents, a fixed-user agent, the instructed prompt, and a sweep factory (an override of None drops the field)."""
    (tmp_path / "user.md").write_text((REPO / "scenarios" / "prompts" / "user-instructed.md").read_text())
    for name in ("alpha", "beta", "critic"):
        write_yaml(tmp_path / f"{name}.yaml", {"name": name, "backend": "scripted", "model": f"{name}-model",
                                               "outputs": ["x"], "concurrency": 2})

    def sweep(**overrides):
        data = {"kind": "sweep", "name": "sw", "agents": ["alpha.yaml", "beta.yaml"], "datasets": ["gsm8k", "ifeval"],
                "items": {"limit": 2}, "user_modes": ["raw", "instructed"], "user_prompt_file": "user.md",
                "temperatures": [0.0, 1.0], "perturbations": ["none", "truncation", {"kind": "explicit_question", "text": "Clear?"}]}
        data.update(overrides)
        return write_yaml(tmp_path / "sweep.yaml", {k: v for k, v in data.items() if v is not None})

    return sweep


def test_a_sweep_expands_into_one_probe_per_agent_and_dataset(sweep_dir):
    sweep = load_sweep(sweep_dir())
    cells = [(c.assistant.spec.name, c.user.spec.name, c.spec.dataset) for c in sweep.cells]
    assert cells == [("alpha", "alpha", "gsm8k"), ("alpha", "alpha", "ifeval"), ("beta", "beta", "gsm8k"), ("beta", "beta", "ifeval")]
    ids = [v.key.episode_id for c in sweep.cells for _, vs in plan(c) for v in vs]
    assert len(ids) == 4 * 2 * 2 * 3 * 2 == len(set(ids)), "cells x items x modes x perturbations x temperatures, all distinct"
    again = load_sweep(sweep_dir())
    assert sweep_run_id(again) == sweep_run_id(sweep)
    assert ids == [v.key.episode_id for c in again.cells for _, vs in plan(c) for v in vs], "ids are stable"
    labels = {v.key.perturbation for c in sweep.cells for _, vs in plan(c) for v in vs}
    assert labels == {"none", "truncation", "explicit_question:clear"}


def test_a_fixed_user_faces_every_assistant(sweep_dir):
    sweep = load_sweep(sweep_dir(user="critic.yaml"))
    assert {c.user.spec.name for c in sweep.cells} == {"critic"}
    assert [c.assistant.spec.name for c in sweep.cells] == ["alpha", "alpha", "beta", "beta"]
    assert sweep_run_id(sweep) != sweep_run_id(load_sweep(sweep_dir()))


def test_one_run_shares_each_answer_and_resumes_after_a_stop(sweep_dir, tmp_path):
    sweep = load_sweep(sweep_dir(user_modes=["instructed"]))
    store = Store(tmp_path / "s.sqlite")
    calls = Counter()
    failing = {"left": 20}

    def make(name):
        def respond(request):
            kind = "user" if "conversation" in request.messages[0]["content"] else "assistant"
            calls[(name, kind)] += 1
            if failing["left"] is not None:
                failing["left"] -= 1
                if failing["left"] < 0:
                    return BackendUnavailable("server went away")
            return "The answer is 18." if kind == "assistant" else f"{name}: why 18? (T={request.temperature:g})"
        return ScriptedBackend(respond, name=name, model=f"{name}-model")

    backends = {"alpha": make("alpha"), "beta": make("beta")}
    with pytest.raises(BackendUnavailable):
        asyncio.run(run_sweep(sweep, store, backends=backends, show_progress=False))
    first = store.episode_counts(sweep_run_id(sweep))["done"]
    assert 0 < first < 48
    failing["left"] = None
    summary = asyncio.run(run_sweep(sweep, store, backends=backends, show_progress=False))
    assert (summary.planned, summary.done, summary.errors, summary.skipped, summary.status) == (48, 48, 0, first, "done")
    episodes = store.episodes(summary.run_id)
    assert len({e.key.episode_id for e in episodes}) == 48
    assert Counter((e.key.assistant_model, e.key.dataset) for e in episodes) == {
        ("alpha-model", "gsm8k"): 12, ("alpha-model", "ifeval"): 12, ("beta-model", "gsm8k"): 12, ("beta-model", "ifeval"): 12}
    assert all(e.key.user_model == e.key.assistant_model for e in episodes), "user: self"
    answers = calls[("alpha", "assistant")] + calls[("beta", "assistant")]
    assert answers <= 8 + 2, "one answer per agent x dataset x item (at most the in-flight ones redone after the stop)"
    assert store.run(summary.run_id).kind == "probe"
    store.close()


def test_servers_start_once_and_stop_when_no_later_cell_needs_them(sweep_dir, monkeypatch):
    events = []

    class FakePool:
        async def backend_for(self, spec):
            events.append(("start", spec.name))
            self.name = spec.name
            return ScriptedBackend(["x"], name=spec.name)

        async def close(self):
            events.append(("stop", self.name))

    monkeypatch.setattr("testbed.running.sweep_runner.BackendPool", FakePool)

    async def walk(sweep):
        async with AgentServers(None) as servers:
            cells = list(sweep.cells)
            for k, cell in enumerate(cells):
                got = await servers.backends_for(cell, cells[k + 1:])
                assert {got["assistant"].name, got["user"].name} == {cell.assistant.spec.name, cell.user.spec.name}

    asyncio.run(walk(load_sweep(sweep_dir())))
    assert events == [("start", "alpha"), ("stop", "alpha"), ("start", "beta"), ("stop", "beta")], "one model in memory at a time"
    events.clear()
    asyncio.run(walk(load_sweep(sweep_dir(user="critic.yaml"))))
    assert events == [("start", "alpha"), ("start", "critic"), ("stop", "alpha"), ("start", "beta"), ("stop", "beta"), ("stop", "critic")] \
        or events == [("start", "alpha"), ("start", "critic"), ("stop", "alpha"), ("start", "beta"), ("stop", "critic"), ("stop", "beta")]
    assert Counter(e for e in events if e[0] == "start") == {("start", "alpha"): 1, ("start", "critic"): 1, ("start", "beta"): 1}


@pytest.mark.parametrize("override, field", [
    ({"datasets": ["gsm8k", "nope"]}, "datasets"),
    ({"datasets": ["gsm8k", "gsm8k"]}, "datasets"),
    ({"agents": ["alpha.yaml", "alpha.yaml"]}, "agents"),
    ({"agents": ["alpha.yaml", "missing.yaml"]}, "agents.1"),
    ({"user": "missing.yaml"}, "user"),
    ({"perturbations": ["none", {"kind": "truncation", "text": "x"}]}, "perturbations.1.text"),
    ({"perturbations": ["truncation", {"kind": "truncation", "fraction": 0.5}]}, "perturbations"),
    ({"temperatures": [0.0, 3.0]}, "temperatures"),
    ({"assistant": "alpha.yaml"}, "assistant"),
])
def test_a_bad_sweep_names_the_field(sweep_dir, override, field):
    with pytest.raises(SpecError) as caught:
        load_sweep(sweep_dir(**override))
    assert caught.value.field == field and caught.value.fix


def test_the_cli_runs_a_sweep_and_refuses_what_a_sweep_does_not_take(sweep_dir, tmp_path):
    path = sweep_dir(user_modes=["instructed"], items={"limit": 1}, datasets=["gsm8k"])
    assert find_sweep(str(path)) == path and find_sweep("probe-gsm8k") is None
    runner = CliRunner()
    refused = runner.invoke(cli, ["run", str(path), "--assistant", "smollm2", "--store", str(tmp_path / "c.sqlite")])
    assert refused.exit_code == 2 and "is a sweep" in refused.output and "--assistant" in refused.output
    done = runner.invoke(cli, ["run", str(path), "--store", str(tmp_path / "c.sqlite"), "-q", "--no-judge", "--no-report"])
    assert done.exit_code == 0, done.output
    assert "12/12 episodes done" in done.output
    shown = runner.invoke(cli, ["show", str(path)])
    assert shown.exit_code == 0 and '"alpha × gsm8k": 6' in shown.output


def test_a_dialogue_sweep_runs_dialogues_per_agent_into_one_dialogue_run(sweep_dir, tmp_path):
    (tmp_path / "dialogue.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    path = sweep_dir(scenario="dialogue", user_modes=["instructed"], user_prompt_file="dialogue.md", perturbations=None,
                     temperatures=[0.7], datasets=["gsm8k"], max_user_turns=3)
    sweep = load_sweep(path)
    assert [c.spec.kind for c in sweep.cells] == ["dialogue", "dialogue"] and sweep.cells[0].spec.max_user_turns == 3
    store = Store(tmp_path / "d.sqlite")
    backends = {name: ScriptedBackend(lambda r, n=name: f"{n} says more", name=name, model=f"{name}-model") for name in ("alpha", "beta")}
    summary = asyncio.run(run_sweep(sweep, store, backends=backends, show_progress=False))
    assert (summary.planned, summary.done, summary.status) == (4, 4, "done")
    assert store.run(summary.run_id).kind == "dialogue"
    turns = store.turns(summary.run_id)
    assert {t.user_turn for t in turns} == {"alpha says more", "beta says more"} and len(turns) == 4 * 2, "3 user turns: 1 opening + 2 generated"
    store.close()


@pytest.mark.parametrize("override, field, words", [
    ({"scenario": "dialogue", "opening": "persona", "personas_file": "p.yaml", "perturbations": None}, "opening", "open with a dataset item"),
    ({"max_user_turns": 3}, "max_user_turns", "unknown field"),
    ({"scenario": "info_gathering"}, "scenario", "probe"),
])
def test_what_a_cell_kind_cannot_take_is_refused(sweep_dir, override, field, words):
    path = sweep_dir(**override)
    data = __import__("yaml").safe_load(path.read_text())
    write_yaml(path, {k: v for k, v in data.items() if v is not None})
    with pytest.raises(SpecError) as caught:
        load_sweep(path)
    assert caught.value.field == field and words in str(caught.value)


def test_a_sweep_without_users_is_stored_as_before_users_existed(sweep_dir):
    stored = load_sweep(sweep_dir()).as_dict()
    assert set(stored["sweep"]) == {"kind", "name", "description", "scenario", "agents", "user", "datasets"}
    assert "users" not in stored and stored["user"] == "self", "unchanged fields keep every existing sweep's run id"


def test_several_users_each_face_every_assistant(sweep_dir):
    sweep = load_sweep(sweep_dir(users=["critic.yaml", "alpha.yaml"]))
    cells = [(c.assistant.spec.name, c.user.spec.name) for c in sweep.cells]
    assert cells == [(a, u) for a in ("alpha", "beta") for u in ("critic", "alpha") for _ in ("gsm8k", "ifeval")]
    assert [u["spec"]["name"] for u in sweep.as_dict()["users"]] == ["critic", "alpha"]
    with pytest.raises(SpecError, match="varies the dataset"):
        load_sweep(sweep_dir(datasets=None))


@pytest.mark.parametrize("scenario", ["probe", "dialogue"])
def test_a_sweep_over_real_conversations_plans_each_human_reference_once(sweep_dir, chats_file, tmp_path, scenario):
    """Every cell over the same real conversations shares one human-reference episode per item: the run plans it once,
    runs it once and ends `done`, not `incomplete` with the reference counted once per cell."""
    from synthetic_chats import conversation
    from testbed.scenarios.human_reference import HUMAN_MODE

    chats_file([conversation(k, follow_ups=2) for k in range(6)])
    options = {"scenario": scenario, "datasets": ["sharegpt"], "items": {"limit": 3, "seed": 1}, "temperatures": [0.0]}
    options |= {"perturbations": ["none"]} if scenario == "probe" else {"perturbations": None, "max_user_turns": 2}
    sweep = load_sweep(sweep_dir(**options))
    store = Store(tmp_path / "s.sqlite")
    backends = {"alpha": ScriptedBackend(lambda r: "tell me more"), "beta": ScriptedBackend(lambda r: "why?")}
    summary = asyncio.run(run_sweep(sweep, store, backends=backends, show_progress=False))
    stored = store.episodes(summary.run_id)
    assert sum(e.key.user_mode == HUMAN_MODE for e in stored) == 3
    assert summary.status == "done" and summary.planned == summary.done == len(stored) == 3 + 2 * 3 * 2
    again = asyncio.run(run_sweep(load_sweep(sweep_dir(**options)), store, backends=backends, show_progress=False))
    assert again.status == "done" and again.skipped == again.planned
