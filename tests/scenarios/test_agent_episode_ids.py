"""Your agent knows its episode: the `episode_id` a python agent reads in its `AgentTurn` and an HTTP agent is sent is the
id the store keys the episode by, the same at every turn of it, another for each episode, and the same when an
interrupted run is resumed, in the same process or another, so an agent's own logs join the stored transcripts."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import signal
import sys
from collections import Counter

import pytest

import episode_id_agents
from helpers import REPO, TESTBED, write_yaml
from http_agent_server import AgentServer
from testbed.backends.factory import BackendPool
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import Store
from testbed.store.frames import episodes_df, messages_df

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

HAS_TAU2 = importlib.util.find_spec("tau2") is not None
TAU2 = pytest.param("tau2", marks=pytest.mark.skipif(not HAS_TAU2, reason="no τ² package"))
PROMPTS = {"probe": "user-instructed.md", "dialogue": "user-dialogue.md", "info_gathering": "user-info-gathering.md",
           "tau2": "user-tau2.md"}
AGENT = "mine"


def scenario_file(kind: str, folder, assistant: str, samples: int = 2, user: str = "scripted.yaml"):
    """A small scenario of `kind` (a scripted user unless `user` names another) with `samples` episodes per unit (two
    units), its path."""
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios/prompts" / PROMPTS[kind]).read_text())
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["Could you say more?"]})
    common = {"kind": kind, "name": f"ids-{kind}", "assistant": assistant, "user": user, "temperatures": [0.7],
              "max_tokens": 16, "user_prompt_file": "prompts/user.md"}
    own = {
        "probe": {"dataset": "gsm8k", "items": {"limit": 2}, "user_modes": ["instructed"], "samples_per_temperature": samples},
        "dialogue": {"opening": "dataset", "dataset": "gsm8k", "items": {"limit": 2}, "user_modes": ["instructed"],
                     "max_user_turns": 3, "end_marker": "[[END]]", "samples_per_temperature": samples},
        "info_gathering": {"tasks": {"limit": 2}, "max_user_turns": 3, "end_marker": "[[END]]",
                           "samples_per_temperature": samples},
        "tau2": {"domain": "mock", "tasks": {"ids": ["create_task_1", "update_task_1"]}, "max_steps": 12, "trials": samples},
    }[kind]
    return write_yaml(folder / f"{kind}.yaml", {**common, **own})


def user_for(kind: str) -> ScriptedBackend:
    """A user that asks for more, and on τ² tasks stops after the agent's second turn."""
    return ScriptedBackend(lambda r: "Thanks. ###STOP###" if kind == "tau2" and len(r.messages) > 4 else "Could you say more?")


async def run_with(scenario, store, kind):
    async with BackendPool() as pool:
        assistant = await pool.backend_for(scenario.assistant.spec)
        return await run_scenario(scenario, store, backends={"assistant": assistant, "user": user_for(kind)}, show_progress=False)


def agent_turns_per_episode(store, run_id: str) -> Counter:
    """How many turns the agent spoke in each stored episode, by the store's episode id."""
    said = messages_df(store, run_id)
    return Counter(said[(said.speaker == AGENT) & (said.role == "assistant")].episode_id)


@pytest.fixture(autouse=True)
def fresh_log():
    episode_id_agents.SEEN.clear()
    episode_id_agents.HOLD_SECOND_TURN = None
    yield
    episode_id_agents.HOLD_SECOND_TURN = None


@pytest.mark.parametrize("kind", ["dialogue", "info_gathering", TAU2])
@pytest.mark.parametrize("backend", ["python", "http-agent"])
async def test_the_agent_is_given_the_stored_episode_id_at_every_turn(kind, backend, tmp_path, store):
    async with AgentServer([{"content": "Noted. What else can you tell me?"}]) as server:
        fields = {"callable": "episode_id_agents:LoggingAgent"} if backend == "python" else {"url": server.url}
        write_yaml(tmp_path / "mine.yaml", {"name": AGENT, "backend": backend, **fields})
        summary = await run_with(load_scenario(scenario_file(kind, tmp_path, "mine.yaml")), store, kind)
    seen = episode_id_agents.SEEN if backend == "python" else [b["episode_id"] for b in server.bodies]
    stored = set(episodes_df(store, summary.run_id).episode_id)
    assert summary.errors == 0 and summary.done == summary.planned == len(stored) == 4
    assert Counter(seen) == agent_turns_per_episode(store, summary.run_id), (
        "each turn's id is its stored episode's, whose stored transcript has exactly that many agent turns")
    assert set(seen) == stored and max(Counter(seen).values()) > 1, "one id per episode, the same at each of its turns"


@pytest.mark.parametrize("backend", ["python", "http-agent"])
async def test_on_the_probe_the_agent_is_given_the_shared_answers_id(backend, tmp_path, store):
    async with AgentServer([{"content": "Noted. What else can you tell me?"}]) as server:
        fields = {"callable": "episode_id_agents:LoggingAgent"} if backend == "python" else {"url": server.url}
        write_yaml(tmp_path / "mine.yaml", {"name": AGENT, "backend": backend, **fields})
        summary = await run_with(load_scenario(scenario_file("probe", tmp_path, "mine.yaml")), store, "probe")
    seen = episode_id_agents.SEEN if backend == "python" else [b["episode_id"] for b in server.bodies]
    said = messages_df(store, summary.run_id)
    reused = said[(said.speaker == AGENT) & (said.role == "assistant")].reused_from
    assert summary.errors == 0 and summary.done == 4 and len(seen) == 2, "one answer per item, shared by its two episodes"
    assert sorted(seen) == sorted(store.shared_answers(summary.run_id)) == sorted(set(reused))


async def test_a_model_is_never_sent_the_episode_id(tmp_path, store):
    async with MockOpenAI(reply_words=6) as mock:
        write_yaml(tmp_path / "model.yaml", {"name": "model", "backend": "vllm", "model": "mock", "base_url": mock.base_url})
        summary = await run_scenario(load_scenario(scenario_file("dialogue", tmp_path, "model.yaml", user="model.yaml")),
                                     store, show_progress=False)
    stored = set(episodes_df(store, summary.run_id).episode_id)
    sent = [json.dumps(body) for body in mock.requests]
    assert summary.done == len(stored) == 4 and len(sent) >= 8, "the assistant and the user both asked the model"
    assert not any("episode_id" in body or any(e in body for e in stored) for body in sent), "a model never sees the id"


async def test_a_resumed_run_gives_a_python_agent_the_same_episode_ids(tmp_path, store):
    write_yaml(tmp_path / "mine.yaml", {"name": AGENT, "backend": "python", "callable": "episode_id_agents:LoggingAgent"})
    scenario = load_scenario(scenario_file("dialogue", tmp_path, "mine.yaml"))
    episode_id_agents.HOLD_SECOND_TURN = asyncio.Event()
    first = asyncio.create_task(run_with(scenario, store, "dialogue"))
    while len(episode_id_agents.SEEN) < 5:
        await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    before = set(episode_id_agents.SEEN)
    episode_id_agents.SEEN.clear()
    episode_id_agents.HOLD_SECOND_TURN = None
    summary = await run_with(scenario, store, "dialogue")
    assert summary.skipped == 0 and summary.done == 4
    assert before == set(episode_id_agents.SEEN) == set(episodes_df(store, summary.run_id).episode_id)
    assert Counter(episode_id_agents.SEEN) == agent_turns_per_episode(store, summary.run_id)


async def run_cli(spec, store_path, *, stop_when=None) -> int:
    """`testbed run` in a process of its own; SIGTERM once `stop_when()` is true. Its exit status."""
    proc = await asyncio.create_subprocess_exec(
        *TESTBED, "run", str(spec), "--store", str(store_path), "--no-report", "--no-judge", "-q", cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    if stop_when is not None:
        async with asyncio.timeout(30):
            while not stop_when() and proc.returncode is None:
                await asyncio.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
    async with asyncio.timeout(60):
        _, err = await proc.communicate()
    assert b"Traceback" not in err, err.decode()
    return proc.returncode


async def test_an_http_agent_is_sent_the_same_episode_ids_by_the_process_that_resumes_an_interrupted_run(tmp_path):
    hold = asyncio.Event()
    turns: Counter = Counter()

    async def answer(request):
        from aiohttp import web

        episode = (await request.json())["episode_id"]
        turns[episode] += 1
        if turns[episode] == 2:
            await hold.wait()
        return web.json_response({"content": "Noted. What else can you tell me?"})

    store_path = tmp_path / "store.sqlite"
    async with AgentServer([answer]) as server:
        write_yaml(tmp_path / "mine.yaml", {"name": AGENT, "backend": "http-agent", "url": server.url})
        spec = scenario_file("dialogue", tmp_path, "mine.yaml")
        interrupted = await run_cli(spec, store_path, stop_when=lambda: 2 in turns.values())
        before = {b["episode_id"] for b in server.bodies}
        hold.set()
        count = len(server.bodies)
        resumed = await run_cli(spec, store_path)
        after = [b["episode_id"] for b in server.bodies[count:]]
    store = Store(store_path)
    try:
        run_id = store.runs()[0]["run_id"]
        stored = episodes_df(store, run_id)
        assert interrupted == 143 and resumed == 0 and (stored.status == "done").all() and len(stored) == 4
        assert before <= set(after) == set(stored.episode_id), "the interrupted episodes carry on under the same ids"
        assert Counter(after) == agent_turns_per_episode(store, run_id)
    finally:
        store.close()
