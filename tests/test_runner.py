"""The probe runner with scripted backends: planning, views, errors, resume without duplicates."""

from __future__ import annotations

import asyncio

import pytest

from testbed.backends.base import BackendError, Capabilities
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.specs.errors import SpecError
from testbed.specs.loader import load_scenario


def answer_backend() -> ScriptedBackend:
    return ScriptedBackend(lambda req: f"The answer is 42. ({req.messages[-1]['content'][:20]})", name="assistant")


def user_backend(fail_on: set[str] | None = None) -> ScriptedBackend:
    def respond(req):
        mode = "raw" if req.continue_final_message else "instructed"
        if fail_on and mode in fail_on:
            raise BackendError(f"scripted failure in {mode}")
        return f"Why 42? ({mode}, T={req.temperature})"

    return ScriptedBackend(respond, name="user")


def rows(store, sql, *args):
    return store.conn.execute(sql, args).fetchall()


async def test_probe_plans_every_variant_and_stores_true_roles(spec_dir, store):
    scenario = load_scenario(spec_dir())
    a, u = answer_backend(), user_backend()
    summary = await run_scenario(scenario, store, backends={"assistant": a, "user": u}, show_progress=False)
    assert (summary.planned, summary.done, summary.errors, summary.status) == (12, 12, 0, "done")
    assert len(a.requests) == 3, "the assistant answer is generated once per item"
    assert len(u.requests) == 12
    msgs = rows(store, "SELECT episode_id, turn_index, role, speaker, reused_from FROM messages ORDER BY episode_id, turn_index")
    assert len(msgs) == 36
    for i in range(0, 36, 3):
        ep = msgs[i : i + 3]
        assert [m["turn_index"] for m in ep] == [0, 1, 2]
        assert [m["role"] for m in ep] == ["user", "assistant", "user"]
        assert ep[0]["speaker"] == "dataset" and ep[1]["reused_from"] is not None and ep[2]["reused_from"] is None
    assert len(rows(store, "SELECT * FROM shared_answers")) == 3


async def test_user_views_raw_continues_user_turn_and_instructed_renders_conversation(spec_dir, store):
    scenario = load_scenario(spec_dir(temperatures=[0.0]))
    u = user_backend()
    await run_scenario(scenario, store, backends={"assistant": answer_backend(), "user": u}, show_progress=False)
    raw = [r for r in u.requests if r.continue_final_message]
    instructed = [r for r in u.requests if not r.continue_final_message]
    assert len(raw) == len(instructed) == 3
    assert [m["role"] for m in raw[0].messages] == ["user", "assistant", "user"]
    assert raw[0].messages[-1]["content"] == ""
    assert len(instructed[0].messages) == 1
    text = instructed[0].messages[0]["content"]
    assert "Now you are the user" in text and "Assistant: The answer is 42." in text and "{conversation}" not in text


async def test_errors_are_outcomes_with_reasons_and_resume_redoes_only_them(spec_dir, store):
    scenario = load_scenario(spec_dir())
    first = await run_scenario(scenario, store, backends={"assistant": answer_backend(), "user": user_backend({"raw"})}, show_progress=False)
    assert (first.done, first.errors, first.status) == (6, 6, "incomplete")
    reasons = {r[0] for r in rows(store, "SELECT error_reason FROM episodes WHERE status='error'")}
    assert reasons == {"user: scripted failure in raw"}
    finished = dict(rows(store, "SELECT episode_id, finished_at FROM episodes WHERE status='done'"))

    a, u = answer_backend(), user_backend()
    second = await run_scenario(scenario, store, backends={"assistant": a, "user": u}, show_progress=False)
    assert (second.done, second.errors, second.status, second.skipped) == (12, 0, "done", 6)
    assert len(a.requests) == 0, "shared answers are reused, not regenerated"
    assert len(u.requests) == 6
    assert all(r.continue_final_message for r in u.requests)
    assert rows(store, "SELECT COUNT(*) FROM episodes")[0][0] == 12
    assert rows(store, "SELECT COUNT(*) FROM messages")[0][0] == 36
    again = dict(rows(store, "SELECT episode_id, finished_at FROM episodes WHERE episode_id IN (%s)" % ",".join("?" * len(finished)), *finished))
    assert again == finished, "finished episodes were not rewritten"


async def test_assistant_failure_marks_the_items_variants_failed(spec_dir, store):
    scenario = load_scenario(spec_dir())
    a = ScriptedBackend(lambda req: (_ for _ in ()).throw(BackendError("HTTP 500 from server")))
    summary = await run_scenario(scenario, store, backends={"assistant": a, "user": user_backend()}, show_progress=False)
    assert (summary.done, summary.errors) == (0, 12)
    assert {r[0] for r in rows(store, "SELECT error_reason FROM episodes")} == {"assistant: HTTP 500 from server"}


async def test_cancelled_run_resumes_to_exact_count(spec_dir, store):
    scenario = load_scenario(spec_dir(items={"limit": 5}))
    slow_user = ScriptedBackend(lambda req: "ok?", delay_s=0.05)
    task = asyncio.create_task(run_scenario(scenario, store, backends={"assistant": answer_backend(), "user": slow_user}, show_progress=False))
    while rows(store, "SELECT COUNT(*) FROM episodes")[0][0] < 3:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    partial = rows(store, "SELECT COUNT(*) FROM episodes")[0][0]
    assert 3 <= partial < 20
    assert rows(store, "SELECT status FROM runs")[0][0] == "interrupted"
    summary = await run_scenario(scenario, store, backends={"assistant": answer_backend(), "user": user_backend()}, show_progress=False)
    assert summary.done == 20 and summary.skipped == partial
    assert rows(store, "SELECT COUNT(*) FROM episodes")[0][0] == 20
    assert rows(store, "SELECT COUNT(DISTINCT episode_id) FROM messages")[0][0] == 20


async def test_raw_mode_refused_for_backend_without_the_capability(spec_dir, store, tmp_path):
    from helpers import write_yaml

    write_yaml(tmp_path / "remote.yaml", {"name": "remote", "backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    scenario = load_scenario(spec_dir(user="remote.yaml"))
    with pytest.raises(SpecError) as err:
        await run_scenario(scenario, store, show_progress=False)
    assert "user_modes" in str(err.value) and "remote.yaml" in str(err.value)
    assert rows(store, "SELECT COUNT(*) FROM runs")[0][0] == 0, "refused before anything was stored or called"


async def test_dead_server_fails_fast_with_url_and_keeps_finished_work(spec_dir, store, tmp_path):
    from helpers import write_yaml

    from testbed.backends.base import BackendUnavailable

    scenario = load_scenario(spec_dir(user_modes=["instructed"]))
    await run_scenario(scenario, store, backends={"assistant": answer_backend(), "user": user_backend()}, show_progress=False)
    write_yaml(tmp_path / "dead.yaml", {"name": "dead", "backend": "vllm", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    other = load_scenario(spec_dir(name="probe-dead", user_modes=["instructed"], assistant="dead.yaml"))
    with pytest.raises(BackendUnavailable) as err:
        await asyncio.wait_for(run_scenario(other, store, show_progress=False), timeout=10)
    assert "http://127.0.0.1:9/v1" in str(err.value)
    assert rows(store, "SELECT COUNT(*) FROM episodes WHERE status='done'")[0][0] == 6


def test_capabilities_default_to_plain_chat():
    assert Capabilities() == Capabilities(continue_user_turn=False, structured_output=False)
