"""`testbed.running.comparison`: the user modes every framework can run, one run and one judging per framework, the table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import REPO, write_yaml

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

from testbed.running.comparison import FrameworkFailed, common_user_modes, load_comparable, run_comparison  # noqa: E402
from testbed.store import Store  # noqa: E402


def dialogue(folder: Path, base_url: str) -> Path:
    """dialogue-gsm8k on the mock server: 1 item, 3 user turns, both user modes as shipped."""
    import yaml

    write_yaml(folder / "mock.yaml", {"name": "mock", "backend": "vllm", "model": "mock", "base_url": base_url})
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user-dialogue.md").write_text((REPO / "scenarios" / "prompts" / "user-dialogue.md").read_text())
    data = yaml.safe_load((REPO / "scenarios" / "dialogue-gsm8k.yaml").read_text())
    data.update(assistant="mock.yaml", user="mock.yaml", items={"limit": 1}, max_user_turns=3)
    return write_yaml(folder / "dialogue.yaml", data)


def test_modes_not_every_framework_runs_are_left_out_unless_named(tmp_path):
    spec = dialogue(tmp_path, "http://127.0.0.1:9/v1")
    scenario, left_out = load_comparable(spec, ["native", "langgraph"])
    assert list(scenario.spec.user_modes) == ["instructed"] and left_out == ["raw"]
    assert common_user_modes(scenario, ["native"]) == ["instructed"]
    alone, none_left = load_comparable(spec, ["native"])
    assert list(alone.spec.user_modes) == ["instructed", "raw"] and none_left == []
    named, kept = load_comparable(spec, ["native", "langgraph"], user_modes=["raw"])
    assert list(named.spec.user_modes) == ["raw"] and kept == []


async def test_one_run_and_one_judging_per_framework_then_the_table_resumed_the_second_time(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    async with MockOpenAI(reply_words=6) as mock:
        scenario, _ = load_comparable(dialogue(tmp_path, mock.base_url), ["native", "langgraph"])
        seen = []
        first = await run_comparison(scenario, store, ["native", "langgraph"], show_progress=False, on_run=seen.append)
        again = await run_comparison(scenario, store, ["native", "langgraph"], show_progress=False)
    assert [r.framework for r in seen] == ["native", "langgraph"] and first.incomplete == []
    assert list(first.frame.framework) == ["native", "langgraph"] and list(first.frame.episodes) == [1, 1]
    assert first.frame.loc[1, "paired_episodes"] == 1 and {s["framework"] for s in first.shapes} == {"native", "langgraph"}
    assert "-langgraph-" in first.run_ids["langgraph"] and str(first.identities["native"]).startswith("learned")
    assert again.run_ids == first.run_ids and all(r.labelled.scored == 0 and r.summary.skipped == 1 for r in again.runs)
    store.close()


async def test_a_dead_server_stops_the_comparison_naming_the_framework(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    scenario, _ = load_comparable(dialogue(tmp_path, "http://127.0.0.1:9/v1"), ["native"])
    with pytest.raises(FrameworkFailed) as stopped:
        await run_comparison(scenario, store, ["native"], show_progress=False)
    assert stopped.value.framework == "native" and stopped.value.reason
    store.close()


async def test_compare_shows_the_local_version_every_other_face_shows(tmp_path):
    """Two local versions on one run: the resumed comparison's row is labelled by the one report and replay show."""
    from dataclasses import replace

    from testbed.judges.verdict import Verdict
    from testbed.judges.turns import label_row
    from testbed.store.labels import default_identity, write_labels

    store = Store(tmp_path / "s.sqlite")
    async with MockOpenAI(reply_words=6) as mock:
        scenario, _ = load_comparable(dialogue(tmp_path, mock.base_url), ["native"])
        first = await run_comparison(scenario, store, ["native"], show_progress=False)
        run_id, current = first.run_ids["native"], first.identities["native"]
        older = replace(current, version="local-0")
        rows = [label_row(t.episode_id, t.turn_index, Verdict("genuine_followup", True, "again")) for t in store.turns(run_id)]
        write_labels(store, run_id, older, rows)
        again = await run_comparison(scenario, store, ["native"], show_progress=False)
    assert default_identity(store, run_id) == older == again.identities["native"]
    assert again.frame.loc[0, "followup_rate"] == 1.0, "the row counts the labels of the version it names"
    store.close()
