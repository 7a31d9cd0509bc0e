"""Your own agent (`backend: python` and `backend: http-agent`) in every scenario kind where an assistant speaks, with a
scripted user: a working agent answers every episode; one that raises, returns junk or hangs makes each episode an
error whose reason names it, and the run still ends."""

from __future__ import annotations

import importlib.util

import pytest

from http_agent_server import AgentServer
from helpers import REPO, write_yaml
from testbed.backends.factory import BackendPool
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.frames import episodes_df, messages_df

HAS_TAU2 = importlib.util.find_spec("tau2") is not None
KINDS = ["probe", "dialogue", "info_gathering", pytest.param("tau2", marks=pytest.mark.skipif(not HAS_TAU2, reason="no τ² package"))]
PROMPTS = {"probe": "user-instructed.md", "dialogue": "user-dialogue.md", "info_gathering": "user-info-gathering.md", "tau2": "user-tau2.md"}


def scenario_of(kind: str, folder, assistant: str):
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios/prompts" / PROMPTS[kind]).read_text())
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})
    common = {"kind": kind, "name": f"byo-{kind}", "assistant": assistant, "user": "scripted.yaml", "temperatures": [0.0],
              "max_tokens": 16}
    own = {
        "probe": {"dataset": "gsm8k", "items": {"limit": 2}, "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md"},
        "dialogue": {"opening": "dataset", "dataset": "gsm8k", "items": {"limit": 2}, "user_modes": ["instructed"],
                     "user_prompt_file": "prompts/user.md", "max_user_turns": 3, "end_marker": "[[END]]"},
        "info_gathering": {"tasks": {"limit": 2}, "user_prompt_file": "prompts/user.md", "max_user_turns": 3, "end_marker": "[[END]]"},
        "tau2": {"domain": "mock", "tasks": {"ids": ["create_task_1", "update_task_1"]}, "user_prompt_file": "prompts/user.md",
                 "max_steps": 12},
    }[kind]
    return load_scenario(write_yaml(folder / f"{kind}.yaml", {**common, **own}))


def user_for(kind: str) -> ScriptedBackend:
    return ScriptedBackend(lambda r: "Thanks. ###STOP###" if kind == "tau2" and len(r.messages) > 3 else "Could you say more?")


async def run_with(scenario, store, kind):
    async with BackendPool() as pool:
        assistant = await pool.backend_for(scenario.assistant.spec)
        return await run_scenario(scenario, store, backends={"assistant": assistant, "user": user_for(kind)}, show_progress=False)


def python_agent(folder, target: str, **fields) -> str:
    write_yaml(folder / "mine.yaml", {"name": "mine", "backend": "python", "callable": target, "timeout_s": 0.3, **fields})
    return "mine.yaml"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_python_agent_answers_in_every_kind(kind, tmp_path, store):
    scenario = scenario_of(kind, tmp_path, python_agent(tmp_path, "byo_agents:CountingAgent"))
    summary = await run_with(scenario, store, kind)
    assert summary.errors == 0 and summary.done == summary.planned > 0
    said = messages_df(store, summary.run_id)
    said = said[(said.speaker == "mine") & (said.role == "assistant")]
    assert said.content.str.contains(r"^turn \d+ of \d+ messages", regex=True).any()
    if kind == "tau2":
        assert said.tool_calls_json.notna().any(), "on τ² tasks the agent got the tool schemas and called one"
    if kind in ("dialogue", "tau2"):
        assert said.content.str.startswith("turn 2 of").any(), "the agent's own state carries across its episode's turns"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how, reason", [("raises", "raised RuntimeError"), ("junk", "returned a int"), ("hangs", "gave no reply within 0.3s")])
async def test_a_misbehaving_python_agent_is_each_episodes_error_naming_it(kind, how, reason, tmp_path, store):
    scenario = scenario_of(kind, tmp_path, python_agent(tmp_path, "byo_agents:Misbehaving", options={"how": how}))
    summary = await run_with(scenario, store, kind)
    assert summary.errors == summary.planned > 0 and summary.done == 0
    reasons = episodes_df(store, summary.run_id).error_reason
    assert all("agent mine (byo_agents:Misbehaving)" in r and reason in r for r in reasons), list(reasons)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_http_agent_answers_in_every_kind_and_its_junk_is_the_episodes_error(kind, tmp_path, store):
    async with AgentServer([{"content": "remote answer"}]) as good, AgentServer([b"not json"]) as bad:
        write_yaml(tmp_path / "good.yaml", {"name": "remote", "backend": "http-agent", "url": good.url})
        write_yaml(tmp_path / "bad.yaml", {"name": "broken", "backend": "http-agent", "url": bad.url, "max_retries": 1})
        fine = await run_with(scenario_of(kind, tmp_path, "good.yaml"), store, kind)
        broken = await run_with(scenario_of(kind, tmp_path, "bad.yaml"), store, kind)
    assert fine.errors == 0 and fine.done == fine.planned > 0 and len({b["episode_id"] for b in good.bodies}) >= fine.planned // 2
    if kind == "tau2":
        assert all(b.get("tools") for b in good.bodies), "τ² turns carry the tool schemas"
    reasons = episodes_df(store, broken.run_id).error_reason
    assert broken.errors == broken.planned and all("agent broken: unreadable reply" in r for r in reasons), list(reasons)
