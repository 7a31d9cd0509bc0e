"""`compare` with your own agents: each is a row `your agent: NAME` beside native, run by the native loop with the
same users, items and system prompt; a Python agent and an HTTP agent (here the mock model's own endpoint, the
OpenAI shape taken as is)."""

from __future__ import annotations

import sys

from helpers import REPO, write_yaml

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

from test_comparison import dialogue  # noqa: E402
from testbed.running.comparison import agent_label, load_comparable, run_comparison, with_agent  # noqa: E402
from testbed.specs.loader import load_agent  # noqa: E402
from testbed.store import Store  # noqa: E402


async def test_your_agents_sit_beside_native_in_the_comparison(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    async with MockOpenAI(reply_words=6) as mock:
        scenario, _ = load_comparable(dialogue(tmp_path, mock.base_url), ["native"], user_modes=["instructed"])
        mine = load_agent(write_yaml(tmp_path / "mine.yaml", {"name": "mine", "backend": "python", "callable": "byo_agents:CountingAgent"}))
        remote = load_agent(write_yaml(tmp_path / "remote.yaml", {"name": "remote", "backend": "http-agent",
                                                                  "url": f"{mock.base_url}/chat/completions", "model": "mock"}))
        seen = []
        result = await run_comparison(scenario, store, ["native"], show_progress=False, on_run=seen.append, agents=[mine, remote])
    assert [r.framework for r in seen] == ["native", "your agent: mine", "your agent: remote"] == list(result.frame.framework)
    assert list(result.frame.episodes) == [1, 1, 1] and list(result.frame.errors) == [0, 0, 0] and result.incomplete == []
    assert result.frame.user_turns.min() > 0
    ran = with_agent(scenario, mine)
    assert ran.assistant.system_prompt == scenario.assistant.system_prompt and ran.assistant.spec.backend == "python"
    episodes = {r.framework: set(store.done_episode_ids(r.summary.run_id)) for r in result.runs}
    assert episodes["native"].isdisjoint(episodes[agent_label(mine)]), "another assistant is another episode (unpaired)"
    wire = [w for records in store.wire_episodes(result.run_ids["your agent: remote"]).values() for w in records]
    assert any(w.role == "assistant" and w.request.get("episode_id") for w in wire), "the HTTP agent's requests are on the wire"
    store.close()
