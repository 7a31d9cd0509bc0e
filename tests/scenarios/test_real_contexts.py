"""Probe and dialogue over real conversations: the real answer shown, the real next turn stored as the human reference."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from helpers import REPO, write_yaml
from synthetic_chats import ANSWERS, QUESTIONS, REPLIES, chats_file, conversation  # noqa: F401
from testbed.analysis.realism.runs import realism_turns, run_realism
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.scenarios.human_reference import HUMAN_MODE, HUMAN_MODEL, REAL_ASSISTANT, REAL_USER, WEAK_HUMAN_MODEL
from testbed.specs.errors import SpecError
from testbed.specs.loader import load_scenario


@pytest.fixture
def real_spec(tmp_path, chats_file):
    chats_file([conversation(k, follow_ups=2) for k in range(12)])
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-instructed.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": 1})

    def make(**overrides):
        data = {"kind": "probe", "name": "real", "dataset": "sharegpt", "items": {"limit": 6, "seed": 1},
                "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["raw", "instructed"],
                "user_prompt_file": "prompts/user.md", "temperatures": [0.0, 1.0], "max_tokens": 16}
        data.update(overrides)
        return load_scenario(write_yaml(tmp_path / f"{data['name']}.yaml", data))

    return make


def episodes(store, run_id):
    return {e.key.episode_id: e for e in store.episodes(run_id)}


async def test_the_probe_shows_the_real_answer_and_stores_the_real_next_turn(real_spec, store):
    assistant = ScriptedBackend(lambda r: "never asked")
    user = ScriptedBackend(lambda r: "could you say more?")
    summary = await run_scenario(real_spec(), store, backends={"assistant": assistant, "user": user}, show_progress=False)
    assert summary.done == 6 * (1 + 4) and summary.errors == 0
    assert not assistant.requests, "the real answer is the assistant's turn: nothing is generated for it"
    seen = user.requests[0].messages
    assert any(m["content"] in ANSWERS for m in seen), "the simulated user sees the real answer"
    by_id = episodes(store, summary.run_id)
    references = [e for e in by_id.values() if e.key.user_mode == HUMAN_MODE]
    assert len(references) == 6 and {e.key.user_model for e in references} == {HUMAN_MODEL}
    for e in references:
        messages = store.messages(summary.run_id, e.key.episode_id)
        assert [m.speaker for m in messages[-2:]] == [REAL_ASSISTANT, REAL_USER]
        assert messages[-1].content in REPLIES and messages[-2].content in ANSWERS
    simulated = [e for e in by_id.values() if e.key.user_mode != HUMAN_MODE]
    assert {e.key.assistant_model for e in simulated} == {REAL_ASSISTANT}
    turns = store.turns(summary.run_id)
    assert len(turns) == 30, "one generated turn per episode, the human reference's included"
    assert {t.question for t in turns} <= set(QUESTIONS)


async def test_rerunning_finds_every_episode_the_reference_included(real_spec, store):
    user = ScriptedBackend(lambda r: "ok")
    backends = {"assistant": ScriptedBackend(lambda r: "x"), "user": user}
    first = await run_scenario(real_spec(), store, backends=backends, show_progress=False)
    again = await run_scenario(real_spec(), store, backends=backends, show_progress=False)
    assert again.run_id == first.run_id and again.done == first.done and again.skipped == first.done


async def test_depth_two_contexts_judge_only_the_turn_after_the_real_answer(real_spec, store):
    spec = real_spec(name="deep", items={"limit": 4, "seed": 0, "contexts": {"depth": 2}}, user_modes=["raw"], temperatures=[0.0])
    summary = await run_scenario(spec, store, backends={"assistant": ScriptedBackend(lambda r: "x"),
                                                       "user": ScriptedBackend(lambda r: "go on")}, show_progress=False)
    assert summary.errors == 0
    for e in store.episodes(summary.run_id):
        messages = store.messages(summary.run_id, e.key.episode_id)
        [turn] = [t for t in store.turns(summary.run_id) if t.episode_id == e.key.episode_id]
        assert turn.turn_index == messages[-1].turn_index


async def test_regenerated_answers_make_a_weak_reference(real_spec, store):
    assistant = ScriptedBackend(lambda r: "My own answer.")
    spec = real_spec(name="regen", regenerate_answer=True, user_modes=["raw"], temperatures=[0.0])
    summary = await run_scenario(spec, store, backends={"assistant": assistant, "user": ScriptedBackend(lambda r: "hm")},
                                 show_progress=False)
    assert assistant.requests and summary.errors == 0
    models = {e.key.user_model for e in store.episodes(summary.run_id) if e.key.user_mode == HUMAN_MODE}
    assert models == {WEAK_HUMAN_MODEL}


async def test_realism_of_a_judged_run_and_the_report_table(real_spec, store, tmp_path):
    replies = iter(["Thanks! can you give an example?", "what about the second one?"] * 100)
    summary = await run_scenario(real_spec(items={"limit": 12}), store, backends={
        "assistant": ScriptedBackend(lambda r: "x"), "user": ScriptedBackend(lambda r: next(replies))}, show_progress=False)
    await judge_run(store, summary.run_id, load_judge("local"), show_progress=False)
    turns = realism_turns(store, summary.run_id, "local")
    assert (turns.source == "real").sum() == 12 and (turns.source == "simulated").sum() == 48
    assert turns.label.notna().all()
    realism = run_realism(store, summary.run_id, "local", resamples=200)
    assert len(realism.table) == 4 and set(realism.table.contexts) == {12} and not realism.weak_reference
    assert realism.baseline.turns.iloc[0] == 12
    store.close()
    result = CliRunner().invoke(app, ["report", summary.run_id, "--store", str(store.path), "-f", "markdown"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "### realism" in result.output and "| real users | human |" in result.output


def test_contexts_for_a_dataset_without_real_conversations_name_the_field(real_spec):
    with pytest.raises(SpecError, match="items.contexts"):
        from testbed.running.runner import plan
        plan(real_spec(name="bad", dataset="gsm8k", items={"limit": 1, "contexts": {"depth": 1}}))


async def test_a_dialogue_over_real_contexts_keeps_a_weak_reference(real_spec, tmp_path, store):
    (tmp_path / "prompts" / "dialogue.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    data = {"kind": "dialogue", "name": "dlg-real", "opening": "dataset", "dataset": "sharegpt", "items": {"limit": 3},
            "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["instructed"],
            "user_prompt_file": "prompts/dialogue.md", "temperatures": [0.7], "max_tokens": 16, "max_user_turns": 2}
    spec = load_scenario(write_yaml(tmp_path / "dlg.yaml", data))
    summary = await run_scenario(spec, store, backends={"assistant": ScriptedBackend(lambda r: "An answer."),
                                                       "user": ScriptedBackend(lambda r: "and then?")}, show_progress=False)
    assert summary.done == 6 and summary.errors == 0
    refs = [e for e in store.episodes(summary.run_id) if e.key.user_mode == HUMAN_MODE]
    assert len(refs) == 3 and {e.key.user_model for e in refs} == {WEAK_HUMAN_MODEL}
    turns = realism_turns(store, summary.run_id)
    assert (turns.source == "real").sum() == 3 and (turns.source == "simulated").sum() == 3
