"""Information gathering with scripted models: facts are released only when asked, and scored locally."""

from __future__ import annotations

import pytest

from helpers import REPO, write_yaml
from testbed.analysis.info_metrics import score_info_episode
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.scenarios.info_gathering import NOTHING_RELEASED
from testbed.scenarios.info_tasks import mentioned_facts
from testbed.specs.errors import SpecError
from testbed.specs.loader import load_scenario
from testbed.store.sqlite_store import message_from_row

TASK = "trip-anniversary-city-break"
ASSISTANT_SCRIPT = [
    "Happy to help! Where would you like to go?",
    "Lovely. What is your budget for the trip?",
    "Here is your plan: three days in Lisbon, tram 28, Time Out Market, for about 1,200 euros.",
]


@pytest.fixture
def info_spec(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-info-gathering.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"]})

    def make(**overrides):
        data = {"kind": "info_gathering", "name": "info", "tasks": {"limit": 1}, "assistant": "scripted.yaml", "user": "scripted.yaml",
                "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 32, "max_user_turns": 6,
                "end_marker": "[[END]]"}
        data.update(overrides)
        return load_scenario(write_yaml(tmp_path / "info.yaml", data))

    return make


def scripted_assistant():
    script = iter(ASSISTANT_SCRIPT)
    return ScriptedBackend(lambda r: next(script))


def honest_user(backend_requests):
    """Answers with every statement its prompt holds, so what it may say is exactly what it was given."""

    def respond(request):
        backend_requests.append(request)
        system = request.messages[0]["content"]
        lines = [line.split(": ", 1)[1] for line in system.splitlines() if line.startswith("- ") and ": " in line and "." in line]
        return " ".join(lines) or "No preference."

    return ScriptedBackend(respond)


async def test_user_prompt_holds_only_asked_facts(info_spec, store):
    scenario = info_spec()
    assert scenario.task_set.by_id(TASK) is not None
    seen = []
    summary = await run_scenario(scenario, store, backends={"assistant": scripted_assistant(), "user": honest_user(seen)}, show_progress=False)
    assert summary.done == 1
    first, second = (r.messages[0]["content"] for r in seen)
    assert "We want to go to Lisbon." in first and "1,200" not in first and "anniversary" not in first
    assert "We want to go to Lisbon." in second and "1,200 euros" in second and "anniversary" not in second
    assert store.conn.execute("SELECT termination FROM episodes").fetchone()[0] == "assistant_done"


async def test_nothing_is_released_before_a_question(info_spec, store):
    seen = []
    assistant = iter(["Tell me about yourself and your plans, please.", "Here is a plan: go somewhere nice."])
    await run_scenario(info_spec(), store, backends={"assistant": ScriptedBackend(lambda r: next(assistant)), "user": honest_user(seen)},
                       show_progress=False)
    assert NOTHING_RELEASED in seen[0].messages[0]["content"]


async def test_user_never_reveals_unasked_facts_with_the_release_logic(info_spec, store):
    scenario = info_spec(tasks={"limit": 10})
    seen = []

    def assistant(request):
        turn = sum(m["role"] == "assistant" for m in request.messages)
        return ["What is your budget and when do you want it?", "Thanks. Here is the result."][min(turn, 1)]

    await run_scenario(scenario, store, backends={"assistant": ScriptedBackend(assistant), "user": honest_user(seen)}, show_progress=False)
    tasks = {t.id: t for t in scenario.task_set.tasks}
    for eid, item_id in store.conn.execute("SELECT episode_id, item_id FROM episodes").fetchall():
        msgs = [message_from_row(r) for r in store.conn.execute("SELECT * FROM messages WHERE episode_id=? ORDER BY turn_index", (eid,))]
        scores = score_info_episode(msgs, tasks[item_id], "assistant_done")
        assert scores["leaked_facts"] == 0
        user_text = " ".join(m.content for m in msgs[1:] if m.role == "user")
        asked = set(scores["recovered"])
        assert mentioned_facts(user_text, tasks[item_id]) <= asked


def test_scores_count_recovery_questions_premature_answers_and_leaks(info_spec):
    from testbed.transcript import Message

    task = info_spec().task_set.by_id(TASK)
    msgs = [Message("user", task.request, "task", 0),
            Message("assistant", "Where do you want to go? And what is your budget?", "a", 1),
            Message("user", "We want to go to Lisbon. It's for our anniversary.", "u", 2),
            Message("assistant", "Here is a Lisbon plan for your anniversary.", "a", 3)]
    s = score_info_episode(msgs, task, "assistant_done")
    assert s["recovered"] == {"destination": 2} and s["questions"] == 2 and s["questions_per_recovered_fact"] == 2
    assert s["leaks"] == [(2, "occasion")] and s["leaked_facts"] == 1
    assert s["facts_in_final_output"] == 2 and s["answered"] and not s["premature_answer"]
    premature = score_info_episode(msgs[:1] + [Message("assistant", "Here is a generic plan.", "a", 1)], task, "assistant_done")
    assert premature["premature_answer"] and premature["questions"] == 0


def test_raw_mode_is_refused_for_information_gathering(info_spec):
    with pytest.raises(SpecError, match="user_modes"):
        info_spec(user_modes=["raw"])


def test_unknown_domain_is_refused(info_spec):
    with pytest.raises(SpecError, match="domains"):
        info_spec(domains=["astrology"])
