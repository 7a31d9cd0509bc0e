"""Information-gathering tasks: the built-in set is sound, bad files fail clearly, matchers are precise."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from testbed.scenarios.info_tasks import (
    InfoTask,
    asked_facts,
    count_questions,
    load_task_set,
    mentioned_facts,
    question_sentences,
)
from testbed.specs.errors import SpecError

TASKS = load_task_set().tasks
GENERIC_QUESTIONS = [
    "Can you tell me more?",
    "Could you share a bit more detail?",
    "Anything else I should know?",
    "Is there anything else you'd like to add?",
    "Can you tell me more about what you need?",
    "Could you give me some more context?",
    "What else?",
]


def fact(fact_id: str, aliases: list[str], cues: list[str]) -> dict:
    return {"id": fact_id, "topic": fact_id, "value": aliases[0], "statement": aliases[0], "aliases": aliases, "cues": cues}


def task_data(task_id: str = "trip-one", request: str = "Plan a trip for me.", **changes) -> dict:
    data = {
        "id": task_id,
        "domain": "trip_plan",
        "request": request,
        "full_request": "Plan a trip to Lisbon for 800 euros with a stay in São Bento.",
        "facts": [
            fact("destination", ["lisbon", "lisboa"], ["where", "destination", "go to"]),
            fact("budget", ["800", "eight hundred"], ["budget", "how much", "spend"]),
            fact("area", ["são bento", "new town"], ["neighbourhood", "stay"]),
        ],
    }
    data.update(changes)
    return data


TRIP = InfoTask.model_validate(task_data())


def write_set(tmp_path: Path, tasks: list[dict]) -> Path:
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "tasks": tasks}, sort_keys=False))
    return path


# --- the built-in set --------------------------------------------------------------------------


def test_builtin_set_size_and_domains():
    domains = Counter(task.domain for task in TASKS)
    assert len(TASKS) >= 36
    assert len(domains) >= 6 and min(domains.values()) >= 5
    assert {"trip_plan", "cover_letter", "event_invitation", "bug_report", "lesson_plan", "product_description"} <= set(domains)
    assert all(3 <= len(task.facts) <= 6 for task in TASKS)
    assert len({task.id for task in TASKS}) == len(TASKS)


def test_builtin_requests_leak_no_fact():
    for task in TASKS:
        assert mentioned_facts(task.request, task) == set(), task.id


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_builtin_statements_and_full_request_agree_with_aliases(task):
    assert mentioned_facts(task.full_request, task) == {f.id for f in task.facts}
    for item in task.facts:
        assert item.id in mentioned_facts(item.statement, task), (task.id, item.id, item.statement)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_builtin_cues_each_ask_exactly_their_fact(task):
    for item in task.facts:
        for cue in item.cues:
            assert asked_facts(f"Could you tell me the {cue}?", task) == {item.id}, (task.id, item.id, cue)
        assert item.id in asked_facts(f"What is the {item.topic}?", task) | asked_facts(f"{item.cues[0]}?", task)


def test_builtin_generic_questions_ask_nothing():
    for task in TASKS:
        for question in GENERIC_QUESTIONS:
            assert asked_facts(question, task) == set(), (task.id, question)


# --- bad files ---------------------------------------------------------------------------------


def test_leaking_request_names_task_fact_and_field(tmp_path):
    path = write_set(tmp_path, [task_data(request="Plan a trip to Lisbon for me.")])
    with pytest.raises(SpecError) as info:
        load_task_set(path)
    assert info.value.field == "tasks.0.request"
    assert "trip-one" in str(info.value) and "destination" in str(info.value) and "lisbon" in str(info.value)


def test_duplicate_task_ids_fail(tmp_path):
    path = write_set(tmp_path, [task_data(), task_data()])
    with pytest.raises(SpecError) as info:
        load_task_set(path)
    assert info.value.field == "tasks" and "trip-one" in info.value.problem


def test_duplicate_fact_ids_fail(tmp_path):
    data = task_data()
    data["facts"][1]["id"] = "destination"
    with pytest.raises(SpecError) as info:
        load_task_set(write_set(tmp_path, [data]))
    assert info.value.field == "tasks.0.facts" and "destination" in info.value.problem


def test_uppercase_alias_fails(tmp_path):
    data = task_data()
    data["facts"][0]["aliases"] = ["Lisbon"]
    with pytest.raises(SpecError) as info:
        load_task_set(write_set(tmp_path, [data]))
    assert info.value.field == "tasks.0.facts.0.aliases" and "'lisbon'" in info.value.fix


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"facts": task_data()["facts"][:2]}, "tasks.0.facts"),
        ({"id": "Trip One"}, "tasks.0.id"),
        ({"colour": "red"}, "tasks.0.colour"),
    ],
)
def test_other_bad_tasks_fail_naming_the_field(tmp_path, change, field):
    with pytest.raises(SpecError) as info:
        load_task_set(write_set(tmp_path, [task_data(**change)]))
    assert info.value.field == field


def test_missing_file_fails(tmp_path):
    with pytest.raises(SpecError):
        load_task_set(tmp_path / "absent.yaml")


# --- mentioned_facts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We have $800.", {"budget"}),
        ("Around 800€ in total", {"budget"}),
        ("It costs 800.", {"budget"}),
        ("Eight-Hundred euros", {"budget"}),
        ("We flew in 1800 and paid 8000.", set()),
        ("It was 1,800 or 800.50 or 3.800", set()),
        ("LISBON's old town", {"destination"}),
        ("We love Lisboa!", {"destination"}),
        ("a hotel in são bento", {"area"}),
        ("the New-Town district", {"area"}),
        ("the new\ntown district", {"area"}),
        ("newtown", set()),
        ("Lisbonite pride", set()),
    ],
)
def test_mentioned_facts(text, expected):
    assert mentioned_facts(text, TRIP) == expected


def test_mentioned_facts_numbers_with_separators_and_units():
    task = InfoTask.model_validate(
        task_data(facts=[fact("cost", ["1200"], ["cost"]), fact("time", ["7 pm", "19:00"], ["what time"]), fact("size", ["10 mb"], ["size"])])
    )
    assert mentioned_facts("$1,200 at 7pm", task) == {"cost", "time"}
    assert mentioned_facts("1,200,000 at 17 pm, 19:005", task) == set()
    assert mentioned_facts("files over 10MB", task) == {"size"}


# --- asked_facts and questions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Can you tell me more?", set()),
        ("What is your budget and where do you want to go?", {"budget", "destination"}),
        ("I will keep your budget in mind.", set()),
        ("When you arrive, go to the castle first.", set()),
        ("Is it Lisbon?", {"destination"}),
        ("Great idea! Before I start, could you tell me your budget.", {"budget"}),
        ("Please let me know how much you want to spend.", {"budget"}),
        ("Here is a plan for Lisbon. Which neighbourhood would you like?", {"area"}),
        ("1) Where would you like to go\n2) What's the budget", {"budget", "destination"}),
        ("Here is the plan. Let me know if you'd like me to change the budget!", set()),
        ("Would you like me to change the budget?", {"budget"}),
    ],
)
def test_asked_facts(message, expected):
    assert asked_facts(message, TRIP) == expected


def test_question_sentences_and_count():
    text = "Sounds fun. Where to? I'd love to know your budget. When you land, relax. What is the plan."
    assert question_sentences(text) == ["Where to?", "I'd love to know your budget.", "What is the plan."]
    assert count_questions(text) == 3
    assert count_questions("Here is your itinerary.") == 0


def test_realistic_clarifying_turns_on_builtin_tasks():
    tasks = {task.id: task for task in TASKS}
    party = tasks["invite-surprise-birthday"]
    assert asked_facts("Who is the party for, and how old is he turning? When and where is it?", party) == {"honoree", "age", "date", "venue"}
    lesson = tasks["lesson-fractions-primary"]
    assert asked_facts("What grade are your students in, and how long is the class?", lesson) == {"grade", "duration"}
    bug = tasks["bug-login-server-error"]
    assert asked_facts("What error do you see, and which browser and OS are you on?", bug) == {"error", "browser", "os"}
