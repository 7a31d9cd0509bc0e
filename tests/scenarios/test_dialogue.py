"""Dialogues with scripted models: typed stops, stripped markers, limits, views, errors, resume."""

from __future__ import annotations

import asyncio

import pytest

from helpers import REPO, write_yaml
from testbed.backends.base import BackendError
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario

MARK = "[[END]]"


@pytest.fixture
def dialogue_spec(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": 1})

    def make(**overrides):
        data = {"kind": "dialogue", "name": "dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 2},
                "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["instructed"],
                "user_prompt_file": "prompts/user.md", "temperatures": [0.7], "max_tokens": 16, "max_user_turns": 4,
                "end_marker": MARK, "token_budget": 10_000}
        data.update(overrides)
        return load_scenario(write_yaml(tmp_path / "dlg.yaml", data))

    return make


def rows(store, sql, *args):
    return store.conn.execute(sql, args).fetchall()


def assistant_backend():
    return ScriptedBackend(lambda r: f"Answer number {len(r.messages)}.")


async def test_user_stop_is_typed_and_the_marker_never_stored(dialogue_spec, store):
    turns = iter(["Why is that?", f"Thanks, that's clear. {MARK}"] * 10)
    user = ScriptedBackend(lambda r: next(turns))
    summary = await run_scenario(dialogue_spec(), store, backends={"assistant": assistant_backend(), "user": user}, show_progress=False)
    assert summary.done == 2
    assert {r[0] for r in rows(store, "SELECT termination FROM episodes")} == {"user_stop"}
    assert rows(store, "SELECT COUNT(*) FROM messages WHERE content LIKE ?", f"%{MARK}%")[0][0] == 0
    ep = rows(store, "SELECT role, content FROM messages WHERE episode_id=(SELECT MIN(episode_id) FROM messages) ORDER BY turn_index")
    assert [r[0] for r in ep] == ["user", "assistant", "user", "assistant", "user"]
    assert ep[-1][1] == "Thanks, that's clear."


async def test_a_bare_marker_ends_without_an_empty_turn(dialogue_spec, store):
    user = ScriptedBackend(lambda r: f"  {MARK} ")
    await run_scenario(dialogue_spec(), store, backends={"assistant": assistant_backend(), "user": user}, show_progress=False)
    assert rows(store, "SELECT COUNT(*) FROM messages WHERE content=''")[0][0] == 0
    assert rows(store, "SELECT MAX(turn_index) FROM messages")[0][0] == 1


async def test_max_turns_and_token_budget(dialogue_spec, store):
    user = ScriptedBackend(lambda r: "And then?")
    await run_scenario(dialogue_spec(), store, backends={"assistant": assistant_backend(), "user": user}, show_progress=False)
    assert {r[0] for r in rows(store, "SELECT termination FROM episodes")} == {"max_turns"}
    assert rows(store, "SELECT COUNT(*) FROM messages WHERE role='user' GROUP BY episode_id")[0][0] == 4
    budget = dialogue_spec(name="dlg-budget", token_budget=16)
    long_answers = ScriptedBackend(lambda r: "word " * 10)
    await run_scenario(budget, store, backends={"assistant": long_answers, "user": user}, show_progress=False)
    assert {r[0] for r in rows(store, "SELECT termination FROM episodes WHERE run_id LIKE 'dlg-budget%'")} == {"token_budget"}


async def test_instructed_user_sees_persona_prompt_and_flipped_roles(dialogue_spec, store):
    user = ScriptedBackend(lambda r: "Why?")
    await run_scenario(dialogue_spec(max_user_turns=2), store, backends={"assistant": assistant_backend(), "user": user}, show_progress=False)
    request = user.requests[0]
    assert [m["role"] for m in request.messages] == ["system", "assistant", "user"]
    assert "You are role-playing the USER" in request.messages[0]["content"] and MARK in request.messages[0]["content"]
    assert "{persona}" not in request.messages[0]["content"] and not request.continue_final_message


async def test_raw_user_continues_the_user_turn(dialogue_spec, store):
    user = ScriptedBackend(lambda r: "Why?")
    await run_scenario(dialogue_spec(user_modes=["raw"], max_user_turns=2), store,
                       backends={"assistant": assistant_backend(), "user": user}, show_progress=False)
    assert all(r.continue_final_message and r.messages[-1] == {"role": "user", "content": ""} for r in user.requests)


async def test_error_mid_dialogue_keeps_the_partial_transcript_with_a_reason(dialogue_spec, store):
    calls = iter(["Why?", BackendError("HTTP 503 from server")] * 4)
    user = ScriptedBackend(lambda r: (lambda x: (_ for _ in ()).throw(x) if isinstance(x, Exception) else x)(next(calls)))
    summary = await run_scenario(dialogue_spec(items={"limit": 1}), store,
                                 backends={"assistant": assistant_backend(), "user": user}, show_progress=False)
    assert summary.errors == 1
    termination, reason = rows(store, "SELECT termination, error_reason FROM episodes")[0]
    assert termination == "error" and "503" in reason
    assert rows(store, "SELECT COUNT(*) FROM messages")[0][0] == 4


async def test_cancelled_dialogue_run_resumes_without_duplicate_turns(dialogue_spec, store):
    scenario = dialogue_spec(items={"limit": 4})
    slow = ScriptedBackend(lambda r: "Why?", delay_s=0.03)
    task = asyncio.create_task(run_scenario(scenario, store, backends={"assistant": assistant_backend(), "user": slow}, show_progress=False))
    while rows(store, "SELECT COUNT(*) FROM episodes")[0][0] < 1:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    before = rows(store, "SELECT COUNT(*) FROM episodes")[0][0]
    assert before < 4
    summary = await run_scenario(scenario, store, backends={"assistant": assistant_backend(), "user": ScriptedBackend(lambda r: "Why?")},
                                 show_progress=False)
    assert summary.done == 4 and summary.skipped == before
    assert rows(store, "SELECT COUNT(*) FROM (SELECT 1 FROM messages GROUP BY episode_id, turn_index HAVING COUNT(*) > 1)")[0][0] == 0
    assert rows(store, "SELECT COUNT(*) FROM messages")[0][0] == 4 * 8, "4 user turns and 4 answers per dialogue"


async def test_persona_dialogues_open_with_the_personas_line(store):
    scenario = load_scenario(REPO / "scenarios/dialogue-personas.yaml")
    scripted = {"assistant": assistant_backend(), "user": ScriptedBackend(lambda r: f"ok {MARK}")}
    summary = await run_scenario(scenario, store, backends=scripted, show_progress=False)
    assert summary.done == len(scenario.personas) * 2
    openings = {r[0] for r in rows(store, "SELECT content FROM messages WHERE turn_index=0")}
    assert openings == {p.opening for p in scenario.personas}
    assert {r[0] for r in rows(store, "SELECT speaker FROM messages WHERE turn_index=0")} == {p.name for p in scenario.personas}


async def test_an_empty_user_turn_is_stored_and_counted_in_the_report(dialogue_spec, store):
    from testbed.analysis.reports.probe import report_frame

    turns = iter(["", "Why?", "", "Why?"] * 10)
    summary = await run_scenario(dialogue_spec(max_user_turns=3), store, backends={"assistant": assistant_backend(),
                                 "user": ScriptedBackend(lambda r: next(turns))}, show_progress=False)
    assert (summary.done, summary.errors) == (2, 0)
    stored = [r[0] for r in rows(store, "SELECT content FROM messages WHERE role='user' AND turn_index > 1")]
    report = report_frame(store, summary.run_id)
    assert int(report.empty_user_turns.sum()) == stored.count("") == 2
