"""The cheap scoring gives τ²'s verdicts: databases compared by the records touched agree with τ²'s hash comparison,
and the whole reward with τ²'s `evaluate_simulation`, on every oracle task of test_oracle.py and on altered episodes
of each (a wrong argument, the writes made twice, reads added); the expected state is built once.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest
from pydantic import BaseModel

from testbed.scenarios.tau2.cow_db import fresh_copy
from testbed.scenarios.tau2.db_equality import same_database
from testbed.scenarios.tau2.domains import domain
from testbed.scenarios.tau2.environment_check import gold_state
from testbed.scenarios.tau2.evaluation import TAU2_TERMINATION, EvaluationFailed
from testbed.scenarios.tau2.oracle import OracleAssistant, expected_calls, final_words, oracle_episode
from testbed.scenarios.tau2.trajectory import to_tau2
from testbed.transcript import ToolCall

SCORED_BY_ACTIONS_AND_STATE = {"DB", "ACTION", "COMMUNICATE"}
READS = ("get_", "search_", "list_", "find_", "calculate")


def oracle_tasks(name: str, sample: int | None = None) -> list[str]:
    """test_oracle.py's tasks: reward basis actions, database and communication only, at least one expected action."""
    tasks = domain(name).tasks
    ids = [t.id for t in tasks.values() if t.evaluation_criteria is not None
           and {b.value for b in t.evaluation_criteria.reward_basis} <= SCORED_BY_ACTIONS_AND_STATE and expected_calls(t)]
    return ids if sample is None else random.Random(0).sample(ids, sample)


def tau2_hash(db) -> str:
    from tau2.utils.utils import get_dict_hash

    return get_dict_hash(db.model_dump())


class Leg(BaseModel):
    seats: list[str]
    price: float


class Booking(BaseModel):
    legs: dict[str, Leg]
    note: str | None = None


class Store(BaseModel):
    bookings: dict[str, Booking]
    flags: list[int]


def pristine() -> Store:
    return Store(bookings={f"b{i}": Booking(legs={"x": Leg(seats=[f"{i}A"], price=100.0 + i)}) for i in range(5)}, flags=[1])


def change_seat(db):
    db.bookings["b1"].legs["x"].seats.append("9Z")


def change_then_undo(db):
    db.bookings["b1"].legs["x"].seats.append("9Z")
    db.bookings["b1"].legs["x"].seats.pop()


def price_as_int(db):
    db.bookings["b2"].legs["x"].price = int(db.bookings["b2"].legs["x"].price)


ALTERATIONS = {
    "nothing": lambda db: None,
    "read only": lambda db: [db.bookings["b0"], list(db.bookings.values())],
    "a nested change": change_seat,
    "a change undone (a copy, equal)": change_then_undo,
    "a float made an int of equal value (equal in Python, not in JSON)": price_as_int,
    "a record added": lambda db: db.bookings.__setitem__("new", Booking(legs={})),
    "a record popped": lambda db: db.bookings.pop("b3"),
    "a record deleted past the copy tracking": lambda db: dict.__delitem__(db.bookings, "b4"),
    "a record replaced past the copy tracking": lambda db: dict.update(db.bookings, b0=Booking(legs={}, note="n")),
    "an equal record put past the copy tracking": lambda db: dict.update(db.bookings, b0=pristine().bookings["b0"]),
    "a non-dict field changed": lambda db: db.flags.append(2),
    "a whole field replaced by an equal plain dict": lambda db: setattr(db, "bookings", dict(pristine().bookings)),
}


@pytest.mark.parametrize("left", ["nothing", "read only", "a nested change"])
@pytest.mark.parametrize("right", list(ALTERATIONS))
def test_same_database_is_tau2s_hash_comparison(left, right):
    base = pristine()
    a, b = fresh_copy(base), fresh_copy(base)
    ALTERATIONS[left](a)
    ALTERATIONS[right](b)
    assert same_database(a, b) == (tau2_hash(a) == tau2_hash(b))
    assert same_database(b, a) == same_database(a, b)
    assert base == pristine()


def altered(task) -> dict[str, list[ToolCall]]:
    """The oracle's calls and altered copies: a wrong string argument in the first call, every write made twice, every
    read made again (records touched whose content is unchanged)."""
    calls = expected_calls(task)
    first = json.loads(calls[0].arguments)
    wrong = {k: (f"{v}-wrong" if isinstance(v, str) else v) for k, v in first.items()}
    writes = [c for c in calls if not c.name.startswith(READS)]
    reads = [ToolCall(f"again_{i}", c.name, c.arguments) for i, c in enumerate(calls) if c.name.startswith(READS)]
    doubled = [*calls, *(ToolCall(f"twice_{i}", c.name, c.arguments) for i, c in enumerate(writes))]
    return {"oracle": calls, "wrong argument": [ToolCall("w", calls[0].name, json.dumps(wrong)), *calls[1:]],
            "writes twice": doubled, "reads again": [*calls, *reads]}


def tau2_verdict(d, task, messages, termination):
    """τ²'s own evaluate_simulation on the episode (its hash comparison, its expected state built afresh)."""
    from tau2.data_model.simulation import SimulationRun
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    run = SimulationRun(id=str(uuid.uuid4()), task_id=task.id, start_time="0", end_time="0", duration=0.0,
                        termination_reason=TAU2_TERMINATION[termination], messages=to_tau2(messages))
    try:
        return evaluate_simulation(run, task, EvaluationType.ALL, solo_mode=False, domain=d.evaluation_name)
    except Exception as exc:
        return exc


@pytest.mark.parametrize("name, sample", [("mock", None), ("airline", 8), ("retail", 8)])
async def test_the_reward_is_tau2s_on_every_oracle_task_and_its_altered_episodes(name, sample):
    d = domain(name)
    verdicts = {"match": 0, "mismatch": 0}
    for task_id in oracle_tasks(name, sample)[:6]:
        task = d.tasks[task_id]  # the first six of test_oracle.py's sample: τ²'s own hashes take a while
        for how, calls in altered(task).items():
            try:
                transcript, termination, ours = await oracle_episode(name, task_id, OracleAssistant(calls, final_words(task)))
            except EvaluationFailed:
                transcript, termination, ours = None, None, None
            if transcript is None:
                continue
            theirs = tau2_verdict(d, task, transcript.messages, termination)
            assert not isinstance(theirs, Exception), (task_id, how, theirs)
            assert ours.reward == theirs.reward, (task_id, how)
            assert ours.breakdown == {k.value: v for k, v in (theirs.reward_breakdown or {}).items()}, (task_id, how)
            assert ours.details == theirs.model_dump(mode="json", exclude={"reward", "reward_breakdown"}, exclude_none=True)
            verdicts["match" if theirs.db_check.db_match else "mismatch"] += 1
    assert verdicts["match"] and verdicts["mismatch"], verdicts


def test_the_expected_state_is_built_once_per_task_and_again_for_other_content():
    d = domain("mock")
    task = d.tasks[oracle_tasks("mock")[0]]
    first = gold_state(d.evaluation_name, d.new_environment, task)
    assert gold_state(d.evaluation_name, d.new_environment, task) is first
    assert gold_state(d.evaluation_name, d.new_environment, task.model_copy(deep=True)) is first, "equal content, kept"
    other = task.model_copy(deep=True)
    other.evaluation_criteria.actions = other.evaluation_criteria.actions[:-1]
    rebuilt = gold_state(d.evaluation_name, d.new_environment, other)
    assert rebuilt is not first
    assert gold_state(d.evaluation_name, d.new_environment, task) is not rebuilt


def test_an_expected_state_built_by_tau2s_own_constructor_is_not_kept():
    from tau2.registry import registry

    task = domain("mock").tasks[oracle_tasks("mock")[0]]
    own = registry.get_env_constructor("mock")
    assert gold_state("mock", own, task) is not gold_state("mock", own, task), "a whole parsed database per task"
